// Replay of committed states: tests/data/states_v1 holds sidecar states written by an earlier mcc
// (tests/data/states_v1/make_states.sh, from models and samples in golden/, one thread). For each,
// today's mcc must (1) replay the state to the same output bytes (the state's output sha256) and
// the same stage stats and records, and (2) run the state's canonical pipeline afresh, with its
// calibration data, to the same bytes and records. Any change to what a stage decides or writes
// fails here, whatever the change was meant to be.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu/kernels/cpu_isa.h"
#include "io/sha256.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

fs::path states_dir() { return mcc::test::source_dir() / "tests/data/states_v1"; }

ordered_json read_json(const fs::path& p) { return ordered_json::parse(mcc::test::slurp(p)); }

/// Stage options added after the fixtures were written, with the default that keeps the old
/// behaviour: today's canonical form lists them, the fixtures do not.
/// `old_value`: the value that does what the stage did before the option existed (a replay
/// records it; a fresh run of an old pipeline text gets today's default unless told).
struct AddedOption {
  const char* stage;
  const char* key;
  const char* old_value;
};
constexpr AddedOption kAddedOptions[] = {{"quantize", "holdout", "0"},
                                         {"quantize", "depthwise_per_channel", "false"},
                                         {"quantize", "mode", "static"},
                                         {"quantize", "embeddings", "false"},
                                         {"quantize", "smooth_quant", "0"},
                                         {"quantize", "smooth_quant_search", "false"},
                                         {"quantize", "smooth_quant_insert", "false"},
                                         {"quantize", "float_gelu_inputs", "false"},
                                         {"quantize", "bits", "4"},
                                         {"quantize", "ratio", "1"},
                                         {"quantize", "block_size", "32"},
                                         {"quantize", "weight_zero_point", "false"},
                                         {"quantize", "scale_search", "true"},
                                         {"quantize", "algorithm", "rtn"},
                                         {"quantize", "gptq_damp", "0.01"},
                                         {"quantize", "gptq_act_order", "false"},
                                         {"quantize", "gptq_block", "128"},
                                         {"quantize", "weight_format", "qdq"},
                                         {"quantize", "target", "generic"},
                                         {"quantize", "dynamic_activations", "per_tensor"},
                                         {"quantize", "awq", "false"},
                                         {"quantize", "awq_grid", "20"},
                                         {"quantize", "awq_clip", "true"},
                                         {"quantize", "lm_head_block_size", "0"},
                                         {"fp16", "convert_embeddings", "false"}};

/// Stats and record entries added after the fixtures were written, with the value they hold when
/// the addition does not apply (nothing of its kind happened): dropped before comparing.
struct AddedField {
  const char* stage;
  const char* section;  // "stats" or "record"
  const char* key;
  const char* empty_value;  // JSON text
};
constexpr AddedField kAddedFields[] = {{"fp16", "stats", "constants_clamped", "0"},
                                       {"fp16", "record", "clamped", "[]"},
                                       {"quantize", "record", "target", "\"generic\""}};

/// The canonical pipeline text without the added options at their old values.
std::string comparable_pipeline(std::string p) {
  for (const auto& a : kAddedOptions) {
    const std::string item = std::string(" ") + a.key + "=" + a.old_value;
    for (auto at = p.find(item); at != std::string::npos; at = p.find(item)) p.erase(at, item.size());
  }
  return p;
}

/// An old pipeline text with the added options set to their old values, so that a fresh run
/// means what it meant when the fixture was written.
std::string with_old_values(std::string p) {
  for (const auto& a : kAddedOptions) {
    const std::string open = std::string(a.stage) + "{";
    for (auto at = p.find(open); at != std::string::npos; at = p.find(open, at + open.size())) {
      const auto close = p.find('}', at);
      if (p.substr(at, close - at).find(std::string(" ") + a.key + "=") != std::string::npos) continue;
      p.insert(close, std::string(" ") + a.key + "=" + a.old_value);
    }
  }
  return p;
}

/// The state's stages with what legitimately differs between runs removed: the calibration
/// folder's spelling (absolute in the fresh run, relative in the fixture) and options added since
/// the fixture was written, when they hold their default.
ordered_json comparable_stages(ordered_json stages) {
  for (auto& s : stages) {
    for (const auto& a : kAddedOptions)
      if (s.value("pass", "") == a.stage && s.contains("options") && s["options"].contains(a.key) &&
          (s["options"][a.key].dump() == a.old_value ||
           (s["options"][a.key].is_number() && s["options"][a.key] == ordered_json::parse(a.old_value)) ||
           (s["options"][a.key].is_string() && s["options"][a.key].get<std::string>() == a.old_value)))
        s["options"].erase(a.key);
    for (const auto& a : kAddedFields)
      if (s.value("pass", "") == a.stage && s.contains(a.section) && s[a.section].contains(a.key) &&
          s[a.section][a.key].dump() == a.empty_value)
        s[a.section].erase(a.key);
    if (s.contains("record") && s["record"].contains("calibration") && s["record"]["calibration"].is_object())
      s["record"]["calibration"].erase("data");
    if (s.contains("options") && s["options"].contains("calib")) s["options"].erase("calib");
  }
  return stages;
}

/// `calib=golden/...` made absolute so the fresh run finds the samples from any cwd.
std::string absolute_calib(std::string pipeline) {
  const std::string key = "calib=golden/";
  const auto at = pipeline.find(key);
  if (at != std::string::npos)
    pipeline.replace(at, key.size(), "calib=" + (mcc::test::source_dir() / "golden").string() + "/");
  return pipeline;
}

std::vector<fs::path> fixtures() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(states_dir()))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("replay fixtures: states written by an earlier mcc replay and rerun byte-identically") {
  const auto files = fixtures();
  REQUIRE(files.size() >= 7);
  mcc::test::TempDir tmp("mcc-replay-fixture");
  for (const auto& f : files) {
    const std::string name = f.stem().stem().string();
    CAPTURE(name);
    const ordered_json state = read_json(f);
    const fs::path input = mcc::test::source_dir() / state.at("input").at("path").get<std::string>();
    REQUIRE(fs::exists(input));
    REQUIRE(mcc::io::sha256_file_hex(input.string()) == state["input"]["sha256"].get<std::string>());
    const std::string want = state.at("output").at("sha256").get<std::string>();

    // (1) replay from the state: no calibration data needed.
    const fs::path replayed = tmp.path / (name + "_replay.onnx");
    auto r = mcc::test::run_mcc({"convert", input.string(), "-o", replayed.string(), "--state", f.string(), "--threads",
                                 "1", "-q"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(mcc::io::sha256_file_hex(replayed.string()) == want);
    const ordered_json replay_state = read_json(tmp.path / (name + "_replay.mcc.json"));
    CHECK(comparable_pipeline(replay_state.at("pipeline")) == state.at("pipeline"));
    CHECK(comparable_stages(replay_state.at("stages")) == comparable_stages(state.at("stages")));

    // (2) the same canonical pipeline run afresh. A data-driven stage's choices depend on the
    // kernels' rounding: the fixtures were written by a build for AVX-512 (-march, so Eigen and
    // the compiler's own loops fuse multiply-adds too) running its AVX-512 kernels.
    const std::string pipeline = state.at("pipeline").get<std::string>();
#if defined(__AVX512F__)
    const bool same_rounding = mcc::backends::cpu::cpu_avx512();
#else
    const bool same_rounding = false;
#endif
    if (!same_rounding && pipeline.find("calib") != std::string::npos) {
      MESSAGE("not an AVX-512 build running its AVX-512 kernels: the fresh run of " << name
              << " (data-driven) is not compared; its replay was");
      continue;
    }
    const fs::path fresh = tmp.path / (name + "_fresh.onnx");
    r = mcc::test::run_mcc({"convert", input.string(), "-o", fresh.string(), "-p",
                            with_old_values(absolute_calib(state.at("pipeline").get<std::string>())), "--threads", "1", "-q"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(mcc::io::sha256_file_hex(fresh.string()) == want);
    const ordered_json fresh_state = read_json(tmp.path / (name + "_fresh.mcc.json"));
    CHECK(comparable_stages(fresh_state.at("stages")) == comparable_stages(state.at("stages")));
  }
}
