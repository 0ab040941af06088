// mcc inspect --backend NAME: placement planned without a device (the mcc binary's cuda backend
// has no GPU on most machines and must still answer).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support/paths.h"
#include "support/run_mcc.h"

namespace {

using mcc::test::run_mcc;

std::string golden_model(const std::string& name) { return (mcc::test::source_dir() / "golden" / name / "model.onnx").string(); }

#if defined(MCC_HAVE_CUDA)
TEST_CASE("inspect --backend cuda --json places every MNIST node on cuda, without a GPU") {
  const auto r = run_mcc({"inspect", golden_model("mnist"), "--backend", "cuda", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.contains("placement"));
  const auto& p = j["placement"];
  CHECK(p["backend"] == "cuda");
  CHECK(p["nodes"] == 12);
  CHECK(p["on_backend"]["cuda"] == 12);
  CHECK(p["on_backend"]["cpu"] == 0);
  CHECK(p["fallbacks"].empty());
  CHECK(p["transfers_per_run"] == 2);  // the input up, the output down
}

TEST_CASE("inspect --backend cuda: a text section") {
  const auto r = run_mcc({"inspect", golden_model("mnist"), "--backend", "cuda"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("placement on cuda: cuda 12 cpu 0 of 12 nodes") != std::string::npos);
}
#else
TEST_CASE("inspect --backend cuda in a build without the cuda backend is exit 5") {
  const auto r = run_mcc({"inspect", golden_model("mnist"), "--backend", "cuda"});
  CHECK(r.code == 5);
  CHECK(mcc::test::one_error_line(r.err));
}
#endif

TEST_CASE("inspect --backend: cpu plan, unknown backend, no flag") {
  auto r = run_mcc({"inspect", golden_model("mnist"), "--backend", "cpu", "--json"});
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out)["placement"]["on_backend"]["cpu"] == 12);
  r = run_mcc({"inspect", golden_model("mnist"), "--backend", "tpu"});
  CHECK(r.code == 2);
  CHECK(mcc::test::one_error_line(r.err));
  r = run_mcc({"inspect", golden_model("mnist")});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("placement on") == std::string::npos);
}

#if defined(MCC_HAVE_CUDA)
TEST_CASE("inspect --backend cuda names the nodes that fall back, with the reason") {
  // Silero VAD: LSTM and If have no cuda kernel; their nodes and the If bodies' nodes are listed.
  const auto r = run_mcc({"inspect", golden_model("silero_vad"), "--backend", "cuda", "--json"});
  REQUIRE(r.code == 0);
  const auto p = nlohmann::json::parse(r.out)["placement"];
  bool lstm = false;
  for (const auto& f : p["fallbacks"]) {
    CHECK_FALSE(f["reason"].get<std::string>().empty());
    lstm = lstm || f["op"] == "LSTM";
  }
  CHECK(lstm);
  CHECK(p["on_backend"]["cuda"].get<int>() + p["on_backend"]["cpu"].get<int>() == p["nodes"].get<int>());
}
#endif

}  // namespace
