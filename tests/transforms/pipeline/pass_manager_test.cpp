// PassManager: stage order and records (options, modified, stats, node and byte counts), verify
// after every stage catching a stage that breaks the IR, error context naming the stage and the
// stages before it, and replay handing every stage its own record.
#include "transforms/pipeline/pass_manager.h"

#include <doctest/doctest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx-ml.pb.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "ir/errors.h"
#include "ir/onnx_io.h"
#include "ir/verifier.h"

namespace {

/// Keeps the per-stage info lines out of the test output while a case runs.
struct QuietLogs {
  spdlog::level::level_enum saved = spdlog::get_level();
  QuietLogs() { spdlog::set_level(spdlog::level::err); }
  ~QuietLogs() { spdlog::set_level(saved); }
};

using namespace mcc::transforms;
using json = nlohmann::ordered_json;

const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] X) => (float[4] Y) { A = Relu(X)  Y = Neg(A) }
)";

mcc::ir::Model load_text(const char* text) {
  onnx::ModelProto mp;
  const auto st = onnx::OnnxParser::Parse(mp, text);
  REQUIRE(st.IsOK());
  std::string bytes;
  mp.SerializeToString(&bytes);
  return mcc::ir::load_model_from_bytes(std::move(bytes), ".");
}

/// What the test-only stages saw, shared through their factories (no global state).
struct Seen {
  std::vector<std::string> labels;
  std::vector<json> replays;  // null when no record was handed over
};

/// Adds an initializer of `floats` values (changes bytes, not nodes); records its name. On replay
/// it takes the name from its record instead of making one up.
class StampPass : public Pass {
 public:
  explicit StampPass(Seen* seen) : seen_(seen) {}
  const PassInfo& info() const override {
    static const PassInfo kInfo{"stamp",
                                "adds an unused initializer",
                                {{"floats", OptionType::Int, "4", "how many", {}},
                                 {"tag", OptionType::String, "s", "name prefix", {}},
                                 {"ballast", OptionType::Int, "0", "bytes of filler in the record", {}}}};
    return kInfo;
  }
  PassResult run(mcc::ir::Model& m, PassContext& ctx) override {
    seen_->labels.push_back(ctx.label);
    seen_->replays.push_back(ctx.replay ? *ctx.replay : json());
    const auto n = ctx.options.get_int("floats");
    const std::string name = ctx.replay
                                 ? ctx.replay->at("name").get<std::string>()
                                 : m.graph->unique_name(ctx.options.get_string("tag") + "_stamp");
    m.graph->add_initializer(name,
                             mcc::ir::Tensor::from_vector<float>({n}, std::vector<float>(n, 1.f)));
    PassResult r;
    r.modified = true;
    r.stats["stamped"] = n;
    r.record["name"] = name;
    if (const auto b = ctx.options.get_int("ballast"); b > 0)
      r.record["ballast"] = {{"text", std::string(static_cast<size_t>(b), 'x')}, {"pi", 3.14159}, {"minus", -7}};
    return r;
  }

 private:
  Seen* seen_;
};

/// Points the first node's input at a value nothing defines: a broken model.
class BreakPass : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo kInfo{"break", "leaves an invalid model", {}};
    return kInfo;
  }
  PassResult run(mcc::ir::Model& m, PassContext&) override {
    auto& ghost = m.graph->add_value("ghost");
    m.graph->set_input(*m.graph->nodes()[0], 0, &ghost);
    return {true, {}, {}};
  }
};

/// Throws: an mcc error (kept with its type) or a std exception (an internal error).
class ThrowPass : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo kInfo{
        "throw",
        "fails",
        {{"kind", OptionType::String, "unsupported", "", {"unsupported", "std"}}}};
    return kInfo;
  }
  PassResult run(mcc::ir::Model&, PassContext& ctx) override {
    if (ctx.options.get_string("kind") == "std") throw std::out_of_range("vector index 7");
    throw mcc::UnsupportedError("node 'n1' (Foo-1): op not handled");
  }
};

PassRegistry make_registry(Seen* seen) {
  PassRegistry r;
  r.add([seen] { return std::unique_ptr<Pass>(std::make_unique<StampPass>(seen)); });
  r.add<BreakPass>();
  r.add<ThrowPass>();
  return r;
}

json stages_json(const std::vector<StageRecord>& records) {
  json j = json::array();
  for (const auto& r : records) j.push_back(r.to_json());
  return j;
}

}  // namespace

TEST_CASE("pass manager: runs stages in order and records what each did") {
  QuietLogs quiet;
  Seen seen;
  const PassRegistry reg = make_registry(&seen);
  const Pipeline p = Pipeline::parse("stamp,big:stamp{floats=10 tag=b}", reg);
  auto m = load_text(kModel);
  const auto records = PassManager(p, reg).run(m);
  REQUIRE(records.size() == 2);
  CHECK(seen.labels == std::vector<std::string>{"stamp", "big"});
  CHECK(seen.replays == std::vector<json>{json(), json()});
  CHECK(records[0].label == "stamp");
  CHECK(records[1].label == "big");
  CHECK(records[1].pass == "stamp");
  CHECK(records[1].options.dump() == R"({"floats":10,"tag":"b","ballast":0})");
  CHECK(records[0].modified);
  CHECK(records[1].stats["stamped"] == 10);
  CHECK(records[1].record["name"] == "b_stamp");
  CHECK(records[0].nodes_before == 2);
  CHECK(records[1].nodes_after == 2);
  CHECK(records[0].initializer_bytes_before == 0);
  CHECK(records[0].initializer_bytes_after == 16);
  CHECK(records[1].initializer_bytes_before == 16);
  CHECK(records[1].initializer_bytes_after == 56);
  CHECK(records[0].seconds >= 0);
  CHECK(mcc::ir::count_initializer_bytes(*m.graph) == 56);
  CHECK_NOTHROW(mcc::ir::verify(m));
  // The JSON form holds everything but the volatile seconds.
  const json j = records[1].to_json();
  CHECK_FALSE(j.contains("seconds"));
  CHECK(j["initializer_bytes_after"] == 56);
  CHECK(j["record"]["name"] == "b_stamp");
}

TEST_CASE("pass manager: a large record waits on disk and comes back unchanged") {
  QuietLogs quiet;
  Seen seen;
  const PassRegistry reg = make_registry(&seen);
  const auto big = static_cast<int64_t>(kParkRecordBytes);
  const Pipeline p = Pipeline::parse("stamp,big:stamp{ballast=" + std::to_string(big) + "}", reg);
  auto m = load_text(kModel);
  const auto records = PassManager(p, reg).run(m);
  REQUIRE(records.size() == 2);
  CHECK(records[0].parked_record == nullptr);  // a small record stays in memory
  CHECK(records[0].record["name"] == "s_stamp");
  REQUIRE(records[1].parked_record != nullptr);
  CHECK(records[1].record.is_null());
  CHECK(records[1].parked_record->bytes() > kParkRecordBytes);
  const json back = records[1].record_json();
  CHECK(back["name"] == "s_stamp_1");
  CHECK(back["ballast"]["text"].get_ref<const std::string&>().size() == kParkRecordBytes);
  CHECK(back["ballast"]["pi"].get<double>() == 3.14159);
  CHECK(back["ballast"]["minus"].get<int64_t>() == -7);
  // Key order and the written text are those of the record as the stage made it.
  const json j = records[1].to_json();
  CHECK(j["record"].dump() == back.dump());
  CHECK(j["record"].begin().key() == "name");
  // Read back twice: the file stays until the record goes.
  CHECK(records[1].record_json() == back);
}

TEST_CASE("parked json: documents of every kind come back as they were") {
  json doc = {{"z", 1}, {"a", json::array({1.5, -2, 18446744073709551615ULL, nullptr, true})},
              {"m", {{"k", "v\u00e9"}, {"empty", json::object()}}}, {"f", 0.1}};
  const std::string text = doc.dump();
  const size_t payload = json_heap_bytes(doc);
  CHECK(payload > text.size() / 4);
  const auto parked = ParkedJson::park(doc);
  REQUIRE(parked != nullptr);
  CHECK(doc.is_null());
  CHECK(parked->load().dump() == text);
}

TEST_CASE("pass manager: verify after each stage catches a stage that breaks the IR and names it") {
  QuietLogs quiet;
  Seen seen;
  const PassRegistry reg2 = make_registry(&seen);
  const Pipeline p = Pipeline::parse("stamp,brk:break,stamp", reg2);
  auto m = load_text(kModel);
  try {
    PassManager(p, reg2).run(m);
    FAIL("a broken model passed");
  } catch (const mcc::InternalError& e) {
    const std::string w = e.what();
    CHECK(w.find("in stage 'brk' (break) after [stamp]") != std::string::npos);
    CHECK(w.find("left an invalid model") != std::string::npos);
    CHECK(w.find("ghost") != std::string::npos);
  }
  CHECK(seen.labels == std::vector<std::string>{"stamp"});  // stopped at the broken stage

  // --no-verify (benchmarks) lets it through.
  auto m2 = load_text(kModel);
  PassManagerOptions no_verify;
  no_verify.verify_each = false;
  CHECK(PassManager(p, reg2, no_verify).run(m2).size() == 3);
  CHECK_THROWS_AS(mcc::ir::verify(m2), mcc::ModelError);
}

TEST_CASE("pass manager: errors keep their type and gain the stage context") {
  QuietLogs quiet;
  Seen seen;
  const PassRegistry reg = make_registry(&seen);
  auto m = load_text(kModel);
  const Pipeline p = Pipeline::parse("stamp,a:stamp,q:throw", reg);
  try {
    PassManager(p, reg).run(m);
    FAIL("no error");
  } catch (const mcc::UnsupportedError& e) {
    CHECK(std::string(e.what()) ==
          "in stage 'q' (throw) after [stamp, a]: node 'n1' (Foo-1): op not handled");
  }
  auto m2 = load_text(kModel);
  try {
    PassManager(Pipeline::parse("throw{kind=std}", reg), reg).run(m2);
    FAIL("no error");
  } catch (const mcc::InternalError& e) {
    CHECK(std::string(e.what()) == "in stage 'throw' (throw): vector index 7");
  }
}

TEST_CASE("pass manager: replay hands every stage its own record") {
  QuietLogs quiet;
  Seen seen;
  const PassRegistry reg = make_registry(&seen);
  const Pipeline p = Pipeline::parse("stamp,x:stamp{tag=x}", reg);
  auto m = load_text(kModel);
  const json saved = stages_json(PassManager(p, reg).run(m));

  json edited = saved;
  edited[1]["record"]["name"] = "from_state";
  seen = {};
  auto m2 = load_text(kModel);
  const auto replayed = PassManager(p, reg).run(m2, &edited);
  REQUIRE(seen.replays.size() == 2);
  CHECK(seen.replays[0] == saved[0]["record"]);
  CHECK(seen.replays[1] == edited[1]["record"]);
  CHECK(replayed[1].record["name"] == "from_state");
  CHECK(m2.graph->initializers.back()->name == "from_state");

  // An unedited replay gives the same records.
  auto m3 = load_text(kModel);
  CHECK(stages_json(PassManager(p, reg).run(m3, &saved)) == saved);

  // Records that do not fit the pipeline are a corrupt state (exit 3), before any stage runs.
  json fewer = saved;
  fewer.erase(1);
  json relabeled = saved;
  relabeled[1]["label"] = "y";
  json no_record = saved;
  no_record[0].erase("record");
  for (const json* bad : {&fewer, &relabeled, &no_record}) {
    seen = {};
    auto m4 = load_text(kModel);
    CHECK_THROWS_AS(PassManager(p, reg).run(m4, bad), mcc::ModelError);
    CHECK(seen.labels.empty());
  }
  CHECK_THROWS_WITH(check_replay_records(p, relabeled, "s.json"),
                    "s.json: stages[1] is stage 'y' (stamp) but the pipeline says 'x' (stamp); the "
                    "file was edited or is corrupt");

  // A record missing what the stage needs is reported as an unusable state, not a crash.
  json hollow = saved;
  hollow[1]["record"] = json::object();
  auto m5 = load_text(kModel);
  CHECK_THROWS_WITH_AS(PassManager(p, reg).run(m5, &hollow),
                       doctest::Contains("in stage 'x' (stamp) after [stamp]: the state's record"),
                       mcc::ModelError);
}
