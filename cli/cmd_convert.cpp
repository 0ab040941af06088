// mcc convert MODEL -o OUT [-p SPEC | --state STATE] [--sidecar PATH] [--dry-run]: validate the
// pipeline (exit 2 before any work), load and verify the input, run the stages (the empty
// pipeline is a lossless round trip), save atomically, and write the sidecar state
// `<OUT without .onnx>.mcc.json` atomically too. The input is read fully before anything is
// written and is never overwritten. --state replays a saved state: same canonical pipeline, each
// stage handed its own record, so the output is byte-identical to the run that wrote the state.
// On success it prints a few lines (report/convert_text.h): what it wrote, the size before and
// after, the check stages' verdicts, the time; -v logs the canonical pipeline and every stage.
#include "cli/cmd_convert.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/common_flags.h"
#include "io/files.h"
#include "io/json_text.h"
#include "io/sha256.h"
#include "io/sidecar.h"
#include "io/terminal.h"
#include "ir/onnx_io.h"
#include "ir/verifier.h"
#include "report/convert_text.h"
#include "transforms/check/check.h"
#include "transforms/pipeline/pass_manager.h"
#include "transforms/pipeline/pipeline.h"

namespace fs = std::filesystem;

namespace mcc::cli {

namespace {

std::string folder_of(const std::string& path) {
  const auto p = fs::path(path).parent_path();
  return p.empty() ? "." : p.string();
}

void print_dry_run(const transforms::Pipeline& p, bool json) {
  if (json)
    io::print_requested(
        io::dump_json(nlohmann::ordered_json{{"pipeline", p.to_string()}, {"stages", p.to_json()}}, 2) + "\n");
  else
    io::print_out("%s\n", p.to_string().c_str());
}

/// The report of a run's checks: {pipeline, passed, checks, escalation}.
nlohmann::ordered_json check_report(const std::string& pipeline, const nlohmann::ordered_json& checks,
                                    const nlohmann::ordered_json& escalation, bool passed) {
  nlohmann::ordered_json r{{"pipeline", pipeline}, {"passed", passed}, {"checks", checks}};
  if (!escalation.is_null()) r["escalation"] = escalation;
  return r;
}

/// A missed budget: the figures on stdout and in the report (--report, else next to -o).
void report_failed_check(const ConvertOptions& o, transforms::check::CheckFailed& e) {
  if (!o.json) report::print_check_lines(e.record());
  const std::string path = o.report_path.empty() ? io::default_check_report_path(o.output) : o.report_path;
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  for (const auto& c : e.record().value("checks", nlohmann::ordered_json::array())) checks.push_back(c);
  io::write_file_atomically(path, io::dump_json(check_report(o.pipeline, checks, o.escalation, false), 2) + "\n");
  if (!o.json) io::print_out("check: figures written to %s; no model was written\n", path.c_str());
}

}  // namespace

int run_convert(const ConvertOptions& o, const transforms::PassRegistry& registry) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string sidecar =
      o.sidecar_path.empty() ? io::default_sidecar_path(o.output) : o.sidecar_path;
  // Everything the user could have got wrong is checked before any work is done.
  io::check_output_path(o.output, "-o");
  io::check_output_path(sidecar, "--sidecar");
  if (io::same_file(o.input, o.output))
    throw UsageError(
        o.output +
        ": -o names the input model; mcc never overwrites its input, choose another output path");
  if (io::same_file(sidecar, o.input) || io::same_file(sidecar, o.output))
    throw UsageError(
        sidecar + ": the sidecar path names the input or output model; choose another --sidecar");
  transforms::Pipeline pipeline;
  std::string base_dir = ".";
  if (o.state_path.empty()) {
    pipeline = transforms::Pipeline::from_argument(o.pipeline, registry);
    if (!o.pipeline.empty() && o.pipeline[0] == '@') base_dir = folder_of(o.pipeline.substr(1));
    if (o.dry_run) {
      print_dry_run(pipeline, o.json);
      return 0;
    }
  }

  // Read the input fully; detach external data when the output goes to the same folder, so that
  // writing the output's data files cannot pull bytes from under the loaded model.
  const bool same_folder = io::same_file(folder_of(o.input), folder_of(o.output));
  io::InputModel in = io::load_input_model(o.input, same_folder, /*with_sha256=*/true);
  spdlog::debug("loaded {} ({} bytes, sha256 {})", o.input, in.size, in.sha256);
  const uint64_t input_bytes = io::model_size_on_disk(in.model, o.input);

  nlohmann::ordered_json state_in;
  if (!o.state_path.empty()) {
    state_in = io::read_sidecar(o.state_path);
    const std::string want = state_in["input"]["sha256"].get<std::string>();
    if (want != in.sha256)
      throw ModelError(o.state_path + ": recorded for another input model (sha256 " +
                       want.substr(0, 12) + "..., this input " + in.sha256.substr(0, 12) +
                       "...); pass the model it was made from");
    try {
      pipeline = transforms::Pipeline::parse_recorded(state_in["pipeline"].get<std::string>(), registry);
    } catch (UsageError& e) {
      throw ModelError(o.state_path + ": the recorded pipeline is not valid for this mcc (" +
                       e.message() + ")");
    }
    transforms::check_replay_records(
        pipeline, state_in.contains("stages") ? state_in["stages"] : nlohmann::ordered_json(),
        o.state_path);
    base_dir = folder_of(o.state_path);
    if (o.dry_run) {
      print_dry_run(pipeline, o.json);
      return 0;
    }
  }

  try {
    ir::verify(in.model);
  } catch (Error& e) {
    e.add_context(o.input + ": the model is not valid");
    throw;
  }

  transforms::PassManagerOptions pm_options;
  pm_options.verify_each = o.verify_each;
  pm_options.base_dir = base_dir;
  pm_options.threads = o.threads;
  pm_options.input_path = o.input;
  const transforms::PassManager pm(pipeline, registry, pm_options);
  spdlog::info("pipeline: {}", pipeline.empty() ? "(empty)" : pipeline.to_string());
  std::vector<transforms::StageRecord> records;
  try {
    records = pm.run(in.model, o.state_path.empty() ? nullptr : &state_in["stages"]);
  } catch (transforms::check::CheckFailed& e) {
    if (o.report_check_failure) report_failed_check(o, e);
    throw;
  }

  try {
    ir::save_model(in.model, o.output);
  } catch (Error& e) {
    e.add_context("writing " + o.output);
    throw;
  }
  io::SidecarRecord rec;
  rec.input_path = o.input;
  rec.input_size = in.size;
  rec.input_sha256 = in.sha256;
  rec.output_path = o.output;
  rec.output_sha256 = io::sha256_file_hex(o.output);
  rec.pipeline = pipeline.to_string();
  for (const auto& r : records) {
    rec.stages.push_back(r.to_json());
    rec.stage_seconds[r.label] = r.seconds;
  }
  rec.checks = io::collect_checks(rec.stages);
  rec.escalation = o.escalation;
  if (!o.state_path.empty() && state_in.contains("escalation")) rec.escalation = state_in["escalation"];
  rec.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto state = io::make_sidecar(rec);
  try {
    io::write_file_atomically(sidecar, io::dump_sidecar(state));
  } catch (...) {
    std::error_code ec;
    fs::remove(o.output, ec);  // no output without its state (the input is never o.output)
    throw;
  }
  if (!o.report_path.empty())
    io::write_file_atomically(o.report_path, io::dump_json(check_report(rec.pipeline, rec.checks, rec.escalation, true), 2) + "\n");
  spdlog::info("{}: sha256 {}", o.output, rec.output_sha256);
  if (!o.state_path.empty() && state_in.contains("output") && state_in["output"].is_object() &&
      state_in["output"].value("sha256", "") != rec.output_sha256)
    spdlog::warn(
        "{}: the replayed output differs from the one recorded in the state (sha256 {}... vs "
        "{}...); "
        "was the state written by another mcc version?",
        o.state_path, rec.output_sha256.substr(0, 12),
        state_in["output"].value("sha256", "").substr(0, 12));

  if (o.json) {
    nlohmann::ordered_json r = state;
    r["sidecar"] = sidecar;
    io::print_requested(io::dump_json(r, 2) + "\n");
    return 0;
  }
  report::ConvertSummary summary;
  summary.written = {o.output, sidecar};
  if (!o.report_path.empty()) summary.written.push_back(o.report_path);
  summary.input_bytes = input_bytes;
  summary.output_bytes = io::model_size_on_disk(in.model, o.output);
  for (const auto& r : records)
    if (r.pass == "check") summary.check_records.push_back(r.record_json());
  summary.replayed = !o.state_path.empty();
  summary.rejected = rec.escalation.is_array() ? rec.escalation.size() : 0;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - o.started.value_or(t0)).count();
  report::print_convert_summary(summary);
  return 0;
}

void add_convert_command(CLI::App& app, CommandSlot& slot) {
  auto opt = std::make_shared<ConvertOptions>();
  auto* sub = app.add_subcommand("convert",
                                 "Run a pipeline of stages; write the model and its sidecar state");
  sub->add_option("model", opt->input, "Input .onnx file")->required();
  sub->add_option("-o,--output", opt->output, "Output .onnx file (written atomically)")->required();
  auto* p =
      sub->add_option("-p,--pipeline", opt->pipeline,
                      "Pipeline spec, e.g. 'fold,fp16{keep_io=true}', or @file.json / @file.yaml "
                      "(empty: round trip; see 'mcc passes')");
  auto* s = sub->add_option("--state", opt->state_path,
                            "Replay the pipeline recorded in this sidecar state");
  p->excludes(s);
  sub->add_option("--sidecar", opt->sidecar_path,
                  "Where to write the state (default: <OUT without .onnx>.mcc.json)");
  add_json_flag(sub, opt->json, "the run's state");
  sub->add_flag("--dry-run", opt->dry_run,
                "Print the canonical pipeline and exit without writing anything");
  sub->add_flag("!--no-verify", opt->verify_each,
                "Skip checking the IR after every stage (benchmarking only)");
  add_threads_flag(sub, opt->threads, "for stages that execute the model");
  add_report_flag(sub, opt->report_path, "the figures of the pipeline's check stages");
  sub->footer(
      "Examples:\n"
      "  mcc convert model.onnx -o out.onnx            # lossless round trip + out.mcc.json\n"
      "  mcc convert model.onnx -o q.onnx -p 'fold,quantize{calib=data holdout=4},check{data=data holdout=4}'\n"
      "  mcc convert model.onnx -o out.onnx -p 'fold,fp16{keep_io=true}' --dry-run\n"
      "  mcc convert model.onnx -o out.onnx -p @pipeline.yaml\n"
      "  mcc convert model.onnx -o out.onnx --state prev.mcc.json   # byte-identical replay");
  sub->callback([opt, &slot] { slot.set([opt] { return run_convert(*opt); }); });
}

}  // namespace mcc::cli
