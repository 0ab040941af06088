// The pass manager: stage order, verification between stages, error context, per-stage records.
#include "transforms/pipeline/pass_manager.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <new>

#include "ir/errors.h"
#include "ir/free_memory.h"
#include "ir/verifier.h"

namespace mcc::transforms {

nlohmann::ordered_json StageRecord::to_json() const {
  nlohmann::ordered_json j;
  j["label"] = label;
  j["pass"] = pass;
  j["options"] = options;
  j["modified"] = modified;
  j["stats"] = stats;
  j["nodes_before"] = nodes_before;
  j["nodes_after"] = nodes_after;
  j["initializer_bytes_before"] = initializer_bytes_before;
  j["initializer_bytes_after"] = initializer_bytes_after;
  j["record"] = record_json();
  return j;
}

nlohmann::ordered_json StageRecord::record_json() const { return parked_record ? parked_record->load() : record; }

void check_replay_records(const Pipeline& pipeline, const nlohmann::ordered_json& stages,
                          const std::string& source) {
  const auto& ps = pipeline.stages();
  if (!stages.is_array())
    throw ModelError(source +
                     ": \"stages\" is missing or not a list; pass a .mcc.json written by mcc");
  if (stages.size() != ps.size())
    throw ModelError(source + ": the state records " + std::to_string(stages.size()) +
                     " stages but its pipeline has " + std::to_string(ps.size()) +
                     "; the file was edited or is corrupt");
  for (size_t i = 0; i < ps.size(); ++i) {
    const auto& s = stages[i];
    const std::string at = source + ": stages[" + std::to_string(i) + "]";
    if (!s.is_object() || !s.contains("label") || !s["label"].is_string() || !s.contains("pass") ||
        !s["pass"].is_string() || !s.contains("record") || !s["record"].is_object())
      throw ModelError(at + " lacks its label, pass or record; the file was edited or is corrupt");
    if (s["label"].get<std::string>() != ps[i].label ||
        s["pass"].get<std::string>() != ps[i].pass())
      throw ModelError(at + " is stage '" + s["label"].get<std::string>() + "' (" +
                       s["pass"].get<std::string>() + ") but the pipeline says '" + ps[i].label +
                       "' (" + ps[i].pass() + "); the file was edited or is corrupt");
  }
}

PassManager::PassManager(const Pipeline& pipeline, const PassRegistry& registry,
                         PassManagerOptions options)
    : pipeline_(pipeline), registry_(registry), options_(std::move(options)) {}

namespace {

std::string stage_context(const Stage& s, const std::vector<std::string>& done) {
  std::string ctx = "in stage '" + s.label + "' (" + s.pass() + ")";
  if (done.empty()) return ctx;
  ctx += " after [";
  for (size_t i = 0; i < done.size(); ++i) ctx += (i ? ", " : "") + done[i];
  return ctx + "]";
}

}  // namespace

std::vector<StageRecord> PassManager::run(ir::Model& model,
                                          const nlohmann::ordered_json* replay) const {
  if (replay) check_replay_records(pipeline_, *replay, "state");
  std::vector<StageRecord> out;
  std::vector<std::string> done;
  for (size_t i = 0; i < pipeline_.stages().size(); ++i) {
    const Stage& s = pipeline_.stages()[i];
    const std::string ctx_text = stage_context(s, done);
    StageRecord r;
    r.label = s.label;
    r.pass = s.pass();
    r.options = s.options_json();
    r.nodes_before = (model.graph ? ir::count_nodes(*model.graph) : 0);
    r.initializer_bytes_before = (model.graph ? ir::count_initializer_bytes(*model.graph) : 0);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      auto pass = registry_.create(s.pass());
      PassContext ctx{s.options, s.label, replay ? &(*replay)[i]["record"] : nullptr,
                      options_.base_dir, options_.threads, options_.input_path};
      PassResult res = pass->run(model, ctx);
      r.modified = res.modified;
      r.stats = std::move(res.stats);
      r.record = std::move(res.record);
      // GPTQ's codes, say: on disk while the later stages (the self-check's two models) run.
      if (json_heap_bytes(r.record) >= kParkRecordBytes) r.parked_record = ParkedJson::park(r.record);
      ir::release_free_memory();  // the stage's temporaries, before the next stage's peak
    } catch (Error& e) {
      e.add_context(ctx_text);
      throw;
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const nlohmann::json::exception& e) {
      // A stage reading a record that does not have the shape it wrote: the state was edited.
      if (replay)
        throw ModelError(ctx_text + ": the state's record for this stage is not usable (" +
                         e.what() + ")");
      throw InternalError(ctx_text + ": " + e.what());
    } catch (const std::exception& e) {
      throw InternalError(ctx_text + ": " + e.what());
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (options_.verify_each) {
      try {
        ir::verify(model);
      } catch (const Error& e) {
        // The input was verified before the first stage, so this stage broke the model.
        throw InternalError(ctx_text + ": the stage left an invalid model (" +
                            std::string(e.what()) +
                            "); this is a bug in the stage (--no-verify skips this check)");
      }
    }
    r.nodes_after = (model.graph ? ir::count_nodes(*model.graph) : 0);
    r.initializer_bytes_after = (model.graph ? ir::count_initializer_bytes(*model.graph) : 0);
    spdlog::info("{}: {} in {:.3f} s, nodes {} -> {}, initializer bytes {} -> {}{}{}", s.label,
                 r.modified ? "modified" : "unchanged", r.seconds, r.nodes_before, r.nodes_after,
                 r.initializer_bytes_before, r.initializer_bytes_after, r.stats.empty() ? "" : ", ",
                 r.stats.empty() ? std::string() : r.stats.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    out.push_back(std::move(r));
    done.push_back(s.label);
  }
  return out;
}

}  // namespace mcc::transforms
