// `mcc convert` with pipelines, end to end: --dry-run prints the canonical form and writes
// nothing, spec errors exit 2 with the nearest name, `mcc passes --json`, file specs, --state
// replays byte for byte (and refuses another model's state with exit 3), identical runs give
// identical models and states that differ only under "timings". The real binary runs the
// built-in stages; run_convert in-process runs a test-only stage through the same command.
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <set>

#include "cli/cmd_convert.h"
#include "io/sidecar.h"
#include "ir/errors.h"
#include "support/run_mcc.h"
#include "transforms/pipeline/pipeline.h"

namespace fs = std::filesystem;
using mcc::test::one_error_line;
using mcc::test::run_mcc;
using mcc::test::RunResult;
using mcc::test::slurp;
using mcc::test::spit;
using nlohmann::json;

namespace {

/// Keeps the per-stage info lines out of the test output while a case runs.
struct QuietLogs {
  spdlog::level::level_enum saved = spdlog::get_level();
  QuietLogs() { spdlog::set_level(spdlog::level::err); }
  ~QuietLogs() { spdlog::set_level(saved); }
};

fs::path mnist() { return mcc::test::source_dir() / "golden/mnist/model.onnx"; }
fs::path other_model() { return mcc::test::source_dir() / "golden/silero_vad/model.onnx"; }

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// Top-level keys whose values differ between two states.
std::set<std::string> differing_keys(const json& a, const json& b) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a.items())
    if (!b.contains(k) || b[k] != v) keys.insert(k);
  for (const auto& [k, v] : b.items())
    if (!a.contains(k)) keys.insert(k);
  return keys;
}

const std::string kFoldFp16 = "fold,fp16{keep_io=true}";

}  // namespace

TEST_CASE("convert --dry-run prints the canonical pipeline and writes nothing") {
  mcc::test::TempDir tmp("mcc-dry");
  const std::string out = (tmp.path / "o.onnx").string();
  const RunResult r = run_mcc({"convert", mnist().string(), "-o", out, "-p",
                               "fold,h:fp16{fp32_ops=Softmax,Gemm}", "--dry-run"});
  CHECK(r.code == 0);
  CHECK(listing(tmp.path).empty());
  CHECK(has(r.out, "fold{"));
  CHECK(has(r.out, ",h:fp16{dtype=fp16 keep_io=true fp32_ops=Softmax,Gemm "));
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  // The printed form is itself a spec that prints the same.
  const std::string canon = r.out.substr(0, r.out.size() - 1);
  const RunResult again =
      run_mcc({"convert", mnist().string(), "-o", out, "-p", canon, "--dry-run"});
  CHECK(again.code == 0);
  CHECK(again.out == r.out);
  const RunResult j =
      run_mcc({"convert", mnist().string(), "-o", out, "-p", "fold", "--dry-run", "--json"});
  CHECK(j.code == 0);
  const json dj = json::parse(j.out);
  CHECK(dj["stages"][0]["stage"] == "fold");
  CHECK(dj["stages"][0]["options"].is_object());
  CHECK(listing(tmp.path).empty());
}

TEST_CASE("convert: spec errors exit 2 on one line with the nearest name, before any work") {
  mcc::test::TempDir tmp("mcc-spec-err");
  const std::string out = (tmp.path / "o.onnx").string();
  const RunResult a = run_mcc({"convert", mnist().string(), "-o", out, "-p", "fold-bn,fp16"});
  CHECK(a.code == 2);
  CHECK(one_error_line(a.err));
  CHECK(has(a.err, "column 1: unknown stage 'fold-bn' (did you mean 'fold'?)"));
  const RunResult b =
      run_mcc({"convert", mnist().string(), "-o", out, "-p", "fold,fp16{dtype=bf17}"});
  CHECK(b.code == 2);
  CHECK(one_error_line(b.err));
  CHECK(has(b.err, "column 11: bad value 'bf17' for option 'dtype' of stage 'fp16'"));
  CHECK(has(b.err, "(did you mean 'bf16'?)"));
  const RunResult c =
      run_mcc({"convert", mnist().string(), "-o", out, "-p", "fold{subgraphs=true", "--dry-run"});
  CHECK(c.code == 2);
  CHECK(has(c.err, "unbalanced braces"));
  const RunResult d =
      run_mcc({"convert", mnist().string(), "-o", out, "-p", "fold{sub_graphs=false}"});
  CHECK(d.code == 2);
  CHECK(has(d.err, "unknown option 'sub_graphs' for stage 'fold' (did you mean 'subgraphs'?)"));
  CHECK(listing(tmp.path).empty());
}

TEST_CASE("convert -p @file: JSON and YAML specs give the same canonical pipeline as inline text") {
  mcc::test::TempDir tmp("mcc-spec-file");
  spit(tmp.path / "p.json",
       R"({"pipeline": [{"stage": "fold"}, {"stage": "fp16", "options": {"keep_io": true}}]})");
  spit(tmp.path / "p.yaml", "pipeline:\n  - fold\n  - stage: fp16\n    options: {keep_io: yes}\n");
  spit(tmp.path / "bad.yaml",
       "pipeline:\n  - fold\n  - stage: fp16\n    options: {keep_oi: yes}\n");
  const std::string out = (tmp.path / "o.onnx").string();
  const RunResult inl =
      run_mcc({"convert", mnist().string(), "-o", out, "-p", kFoldFp16, "--dry-run"});
  const RunResult js = run_mcc({"convert", mnist().string(), "-o", out, "-p",
                                "@" + (tmp.path / "p.json").string(), "--dry-run"});
  const RunResult ym = run_mcc({"convert", mnist().string(), "-o", out, "-p",
                                "@" + (tmp.path / "p.yaml").string(), "--dry-run"});
  CHECK(inl.code == 0);
  CHECK(js.code == 0);
  CHECK(ym.code == 0);
  CHECK(js.out == inl.out);
  CHECK(ym.out == inl.out);
  const RunResult bad = run_mcc(
      {"convert", mnist().string(), "-o", out, "-p", "@" + (tmp.path / "bad.yaml").string()});
  CHECK(bad.code == 2);
  CHECK(one_error_line(bad.err));
  CHECK(has(bad.err,
            "bad.yaml:4:15: pipeline[1].options.keep_oi: unknown option 'keep_oi' for stage 'fp16' "
            "(did you mean 'keep_io'?)"));
}

TEST_CASE("mcc passes lists every stage with its options; --json parses") {
  const RunResult t = run_mcc({"passes"});
  CHECK(t.code == 0);
  CHECK(has(t.out, "fold  "));
  CHECK(has(t.out, "fp16  "));
  const RunResult r = run_mcc({"passes", "--json"});
  CHECK(r.code == 0);
  const json j = json::parse(r.out);
  REQUIRE(j["stages"].is_array());
  std::vector<std::string> names;
  for (const auto& s : j["stages"]) names.push_back(s["name"].get<std::string>());
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::find(names.begin(), names.end(), "fold") != names.end());
  CHECK(std::find(names.begin(), names.end(), "fp16") != names.end());
  for (const auto& s : j["stages"]) {
    CHECK(s["summary"].get<std::string>().size() > 0);
    for (const auto& o : s["options"]) {
      CHECK(o["key"].is_string());
      CHECK(o["type"].is_string());
      CHECK(o["default"].is_string());
      CHECK(o["choices"].is_array());
      CHECK(o["help"].get<std::string>().size() > 0);
    }
  }
}

TEST_CASE(
    "convert: identical runs give identical models and states that differ only under timings") {
  mcc::test::TempDir tmp("mcc-determinism");
  const std::string out = (tmp.path / "o.onnx").string();
  const RunResult first = run_mcc({"convert", mnist().string(), "-o", out, "-p", kFoldFp16, "-q"});
  REQUIRE(first.code == 0);
  const std::string model1 = slurp(out), state1 = slurp(tmp.path / "o.mcc.json");
  const RunResult second = run_mcc({"convert", mnist().string(), "-o", out, "-p", kFoldFp16, "-q"});
  REQUIRE(second.code == 0);
  CHECK(slurp(out) == model1);
  const json a = json::parse(state1), b = json::parse(slurp(tmp.path / "o.mcc.json"));
  CHECK(differing_keys(a, b) <= std::set<std::string>{"timings"});
  CHECK(a["stages"].size() == 2);
  CHECK(a["stages"][1]["pass"] == "fp16");
  CHECK(a["stages"][1]["modified"] == true);
  CHECK(a["stages"][1]["options"]["keep_io"] == true);
  CHECK(a["stages"][0].contains("nodes_before"));
  CHECK(a["stages"][0].contains("initializer_bytes_after"));
  CHECK_FALSE(a["stages"][0].contains("seconds"));
  CHECK(a["timings"]["stages"]["fp16"].is_number_float());
  CHECK(a["pipeline"] == mcc::transforms::Pipeline::parse(kFoldFp16).to_string());
}

TEST_CASE("convert --state replays the pipeline byte for byte; another model's state is exit 3") {
  mcc::test::TempDir tmp("mcc-replay");
  const std::string out = (tmp.path / "o.onnx").string(),
                    state = (tmp.path / "o.mcc.json").string();
  REQUIRE(run_mcc({"convert", mnist().string(), "-o", out, "-p", kFoldFp16, "-q"}).code == 0);
  const std::string again = (tmp.path / "again.onnx").string();
  const RunResult r = run_mcc({"convert", mnist().string(), "-o", again, "--state", state});
  CHECK(r.code == 0);
  CHECK(slurp(again) == slurp(out));
  CHECK_FALSE(has(r.err, "differs"));
  const json s0 = json::parse(slurp(state)), s1 = json::parse(slurp(tmp.path / "again.mcc.json"));
  CHECK(s1["pipeline"] == s0["pipeline"]);
  CHECK(s1["output"]["sha256"] == s0["output"]["sha256"]);

  SUBCASE("--dry-run with --state prints the recorded pipeline") {
    const RunResult d = run_mcc({"convert", mnist().string(), "-o", (tmp.path / "d.onnx").string(),
                                 "--state", state, "--dry-run"});
    CHECK(d.code == 0);
    CHECK(d.out == s0["pipeline"].get<std::string>() + "\n");
    CHECK_FALSE(fs::exists(tmp.path / "d.onnx"));
  }
  SUBCASE("the state of another model") {
    const RunResult o = run_mcc({"convert", other_model().string(), "-o",
                                 (tmp.path / "x.onnx").string(), "--state", state});
    CHECK(o.code == 3);
    CHECK(one_error_line(o.err));
    CHECK(has(o.err, "recorded for another input model"));
    CHECK_FALSE(fs::exists(tmp.path / "x.onnx"));
  }
  SUBCASE(
      "a state whose records do not fit its pipeline, a newer schema, or a pipeline this mcc "
      "cannot run") {
    json relabeled = s0;
    relabeled["stages"][1]["label"] = "other";
    json newer = s0;
    newer["schema_version"] = mcc::io::kSidecarSchemaVersion + 1;
    json unknown = s0;
    unknown["pipeline"] = "fold,quantise";
    const std::pair<json, std::string> cases[] = {{relabeled, "stages[1] is stage 'other' (fp16)"},
                                                  {newer, "newer mcc"},
                                                  {unknown, "unknown stage 'quantise'"}};
    for (const auto& [bad, why] : cases) {
      CAPTURE(why);
      spit(tmp.path / "bad.mcc.json", bad.dump());
      const RunResult b =
          run_mcc({"convert", mnist().string(), "-o", (tmp.path / "y.onnx").string(), "--state",
                   (tmp.path / "bad.mcc.json").string()});
      CHECK(b.code == 3);
      CHECK(one_error_line(b.err));
      CHECK(has(b.err, why));
      CHECK_FALSE(fs::exists(tmp.path / "y.onnx"));
    }
  }
}

namespace {

/// Test-only stage: stamps model metadata with a value it picks from its option, or, on replay,
/// from its record; so a replay that ignores records would be visible in the output bytes.
class MetadataStampPass : public mcc::transforms::Pass {
 public:
  const mcc::transforms::PassInfo& info() const override {
    static const mcc::transforms::PassInfo kInfo{
        "stamp",
        "writes metadata",
        {{"value", mcc::transforms::OptionType::Float, "0.1", "the value", {}}}};
    return kInfo;
  }
  mcc::transforms::PassResult run(mcc::ir::Model& m, mcc::transforms::PassContext& ctx) override {
    const double v =
        ctx.replay ? ctx.replay->at("value").get<double>() : ctx.options.get_float("value") / 3;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    m.metadata_props.emplace_back("stamp", buf);
    mcc::transforms::PassResult r;
    r.modified = true;
    r.record["value"] = v;
    return r;
  }
};

}  // namespace

TEST_CASE(
    "convert in-process: a test-only stage's record drives the replay; floats round-trip exactly") {
  QuietLogs quiet;
  mcc::transforms::PassRegistry reg;
  reg.add<MetadataStampPass>();
  mcc::test::TempDir tmp("mcc-replay-inproc");
  mcc::cli::ConvertOptions o;
  o.input = mnist().string();
  o.output = (tmp.path / "a.onnx").string();
  o.pipeline = "stamp{value=0.7}";
  REQUIRE(mcc::cli::run_convert(o, reg) == 0);
  const json state = json::parse(slurp(tmp.path / "a.mcc.json"));
  CHECK(state["stages"][0]["record"]["value"].get<double>() == 0.7 / 3);  // same bits after text

  mcc::cli::ConvertOptions replay = o;
  replay.pipeline.clear();
  replay.output = (tmp.path / "b.onnx").string();
  replay.state_path = (tmp.path / "a.mcc.json").string();
  REQUIRE(mcc::cli::run_convert(replay, reg) == 0);
  CHECK(slurp(tmp.path / "b.onnx") == slurp(tmp.path / "a.onnx"));
  const json replayed = json::parse(slurp(tmp.path / "b.mcc.json"));
  CHECK(replayed["stages"] == state["stages"]);

  json edited = state;
  edited["stages"][0]["record"]["value"] = 0.5;
  spit(tmp.path / "edited.mcc.json", edited.dump(2));
  replay.output = (tmp.path / "c.onnx").string();
  replay.state_path = (tmp.path / "edited.mcc.json").string();
  REQUIRE(mcc::cli::run_convert(replay, reg) == 0);
  CHECK(slurp(tmp.path / "c.onnx") != slurp(tmp.path / "a.onnx"));
  CHECK(json::parse(slurp(tmp.path / "c.mcc.json"))["stages"][0]["record"]["value"] == 0.5);

  // The sidecar's JSON text gives back the exact bits of any double (shortest round-trip form).
  for (double x : {0.1, 0.7 / 3, 1.0 / 3, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                   -0.0, static_cast<double>(0.1f), 123456789.123456789}) {
    const json back = json::parse(mcc::io::dump_sidecar(json{{"x", x}}));
    const double y = back["x"].get<double>();
    CHECK(std::memcmp(&x, &y, sizeof x) == 0);
  }
}
