// `mcc bench --backend cuda` (in process, on the emulated backend): the report carries the
// placement with its cpu fallbacks and the measured transfers; the cpu report has neither.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/bench_report.h"
#include "cli/commands.h"
#include "ir/onnx_io.h"
#include "support/files.h"
#include "support/graph_builder.h"
#include "support/paths.h"

namespace mcc {
namespace {

/// y = Relu(Hardmax(Add(Relu(x), w))): Hardmax has no cuda kernel.
std::string save_mixed_model(const std::filesystem::path& dir) {
  ir::Model m = test::empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "x", {4, 8});
  ir::Value& w = test::add_random_init(g, "w", {4, 8}, 3);
  ir::Node& first = test::add_node(g, "Relu", "first", {&x}, {"r"}, 17);
  ir::Node& add = test::add_node(g, "Add", "add", {first.outputs[0], &w}, {"a"}, 17);
  ir::Node& hm = test::add_node(g, "Hardmax", "hardmax", {add.outputs[0]}, {"h"}, 17);
  ir::Node& relu = test::add_node(g, "Relu", "relu", {hm.outputs[0]}, {"y"}, 17);
  g.outputs.push_back(relu.outputs[0]);
  const std::string path = (dir / "mixed.onnx").string();
  ir::save_model(m, path);
  return path;
}

nlohmann::json bench_report(const std::string& model, const std::string& backend, const std::filesystem::path& dir) {
  const std::string report = (dir / ("bench_" + backend + ".json")).string();
  std::vector<std::string> args{"mcc", "bench", model, "--backend", backend, "--warmup", "1", "--runs", "3",
                                "--threads", "1", "--report", report};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  CLI::App app;
  cli::CommandSlot slot;
  cli::add_bench_command(app, slot);
  app.parse(static_cast<int>(argv.size()), argv.data());
  REQUIRE(slot.run() == 0);
  return nlohmann::json::parse(test::slurp(report));
}

}  // namespace

TEST_SUITE("cuda-emulated") {

TEST_CASE("mcc bench --backend cuda reports placement, fallbacks and measured transfers") {
  test::TempDir dir("mcc-bench-cuda");
  const std::string model = save_mixed_model(dir.path);

  const nlohmann::json cpu = bench_report(model, "cpu", dir.path);
  CHECK_FALSE(cpu.contains("placement"));
  CHECK_FALSE(cpu.contains("device_stats"));

  const nlohmann::json j = bench_report(model, "cuda", dir.path);
  REQUIRE(j.contains("placement"));
  REQUIRE(j.contains("device_stats"));
  const auto& p = j["placement"];
  const auto& d = j["device_stats"];
  CHECK(p["backend"] == "cuda");
  CHECK(p["nodes"] == 4);
  bool hardmax_falls_back = false;
  for (const auto& f : p["fallbacks"]) hardmax_falls_back = hardmax_falls_back || f["node"] == "hardmax";
  CHECK(hardmax_falls_back);
  CHECK(d["runs"] == 4);
  CHECK(d["nodes_on_backend"].get<int64_t>() + d["nodes_on_cpu"].get<int64_t>() == 4);
  if (d["nodes_on_backend"] == 3) {  // Add and Relu have cuda kernels
    CHECK(d["transfers_per_run"].get<double>() == doctest::Approx(4.0));
    CHECK(d["transfer_bytes_per_run"].get<double>() == doctest::Approx(4 * 32 * 4));
    CHECK(d["initializer_uploads"] == 1);
    CHECK(d["initializer_bytes"] == 32 * 4);
  } else {
    CHECK(d["transfers_per_run"].get<double>() == 0.0);
  }
  CHECK(d["transfer_ms_per_run"].get<double>() >= 0.0);

  const std::string text = report::render_bench_device_stats(nlohmann::ordered_json::parse(j.dump()));
  CHECK(text.find("nodes: cuda ") != std::string::npos);
  CHECK(text.find("cpu fallback: hardmax (Hardmax)") != std::string::npos);
  CHECK(text.find("transfers per run: ") != std::string::npos);
}

}  // TEST_SUITE
}  // namespace mcc
