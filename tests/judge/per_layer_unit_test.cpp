// Unit tests of the per-layer ranking: pooled SNR, error introduced vs inherited, the order of
// both ranks, the exclusion rule and the ready-to-paste stage option.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "judge/per_layer.h"
#include "transforms/common/node_filter.h"
#include "transforms/pipeline/pipeline.h"

namespace judge = mcc::judge;
using mcc::judge::LayerStat;

namespace {

/// A layer whose pooled SNR is `snr_db` (signal power 1), reading `inputs`.
judge::LayerStat layer(const std::string& name, double snr_db, std::vector<std::string> inputs, bool quantized = true,
                int64_t order = 0) {
  judge::LayerStat l;
  l.value = name + "_out";
  l.node = l.ref_node = name;
  l.op = l.ref_op = "Conv";
  l.inputs = std::move(inputs);
  if (quantized) l.exclude_targets = {name};
  l.order = order;
  l.samples = 1;
  l.signal = 1;
  l.noise = std::isinf(snr_db) ? 0 : std::pow(10.0, -snr_db / 10);
  l.worst_snr_db = snr_db;
  return l;
}

const judge::LayerStat& by_node(const std::vector<judge::LayerStat>& ls, const std::string& node) {
  for (const auto& l : ls)
    if (l.node == node) return l;
  throw std::runtime_error("no layer " + node);
}

/// conv1 (40 dB) -> conv2 (bad: 10 dB) -> conv3 (9.5 dB) -> conv4 (9.4 dB), plus a side branch.
std::vector<judge::LayerStat> chain() {
  return {layer("conv1", 40, {"X"}, true, 1), layer("conv2", 10, {"conv1_out"}, true, 2),
          layer("conv3", 9.5, {"conv2_out"}, true, 3), layer("conv4", 9.4, {"conv3_out"}, true, 4),
          layer("side", 38, {"conv1_out"}, true, 5)};
}

}  // namespace

TEST_CASE("per-layer ranking: worst pooled SNR first; the layer that introduces the error ranks first by introduced") {
  auto ls = chain();
  mcc::judge::rank_layers(ls);
  REQUIRE(ls.size() == 5);
  CHECK(ls[0].node == "conv4");  // lowest SNR, but it only inherits
  CHECK(ls[0].rank == 1);
  CHECK(ls[1].node == "conv3");
  CHECK(ls[2].node == "conv2");
  CHECK(ls[4].node == "conv1");
  CHECK(by_node(ls, "conv2").introduced_rank == 1);
  // conv2: nsr 0.1 - 1e-4 inherited -> introduced SNR just above 10 dB.
  CHECK(by_node(ls, "conv2").introduced_snr_db() == doctest::Approx(10.0).epsilon(0.01));
  CHECK(by_node(ls, "conv2").inherited_snr_db() == doctest::Approx(40.0));
  // conv3 inherits 10 dB and adds little: its introduced SNR is far better than its SNR.
  CHECK(by_node(ls, "conv3").introduced_snr_db() > 19.0);
  // conv1 reads the graph input: nothing inherited, everything introduced.
  CHECK(std::isinf(by_node(ls, "conv1").inherited_snr_db()));
  CHECK(by_node(ls, "conv1").introduced_snr_db() == doctest::Approx(40.0));
}

TEST_CASE("per-layer exclusion: the outlier by introduced error is suggested, its inheritors are not") {
  auto ls = chain();
  mcc::judge::rank_layers(ls);
  const auto ex = mcc::judge::choose_exclusions(ls, 3);
  REQUIRE(ex.size() == 1);
  CHECK(ex[0] == "conv2");
  const std::string opt = mcc::judge::exclusion_stage_option(ex);
  CHECK(opt.rfind("quantize{", 0) == 0);
  CHECK(opt.find("=conv2}") != std::string::npos);
}

TEST_CASE("per-layer exclusion: uniform int8 noise suggests nothing") {
  std::vector<judge::LayerStat> ls{layer("a", 41, {"X"}, true, 1), layer("b", 39, {"a_out"}, true, 2),
                            layer("c", 38, {"b_out"}, true, 3)};
  mcc::judge::rank_layers(ls);
  CHECK(ls[0].node == "c");
  CHECK(mcc::judge::choose_exclusions(ls, 3).empty());
}

TEST_CASE("per-layer exclusion: a layer the model does not quantize is never suggested") {
  std::vector<judge::LayerStat> ls{layer("a", 40, {"X"}, true, 1), layer("softmax", 5, {"a_out"}, false, 2),
                            layer("b", 39, {"a_out"}, true, 3)};
  mcc::judge::rank_layers(ls);
  CHECK(by_node(ls, "softmax").introduced_rank == 1);
  CHECK(mcc::judge::choose_exclusions(ls, 3).empty());
}

TEST_CASE("per-layer exclusion: worst first, capped, one name per node") {
  std::vector<judge::LayerStat> ls{layer("a", 40, {"X"}, true, 1),  layer("b", 12, {"a_out"}, true, 2),
                            layer("c", 40, {"X"}, true, 3),  layer("d", 8, {"c_out"}, true, 4),
                            layer("e", 40, {"X"}, true, 5),  layer("f", 15, {"e_out"}, true, 6),
                            layer("g", 40, {"X"}, true, 7),  layer("h", 40, {"X"}, true, 8),
                            layer("i", 40, {"X"}, true, 9),  layer("j", 40, {"X"}, true, 10),
                            layer("k", 40, {"X"}, true, 11)};
  judge::LayerStat split2 = layer("d", 8, {"c_out"}, true, 4);  // a second output of node d
  split2.value = "d_out2";
  ls.push_back(split2);
  mcc::judge::rank_layers(ls);
  auto ex = mcc::judge::choose_exclusions(ls, 2);
  CHECK(ex == std::vector<std::string>{"d", "b"});
  ex = mcc::judge::choose_exclusions(ls, 5);
  CHECK(ex == std::vector<std::string>{"d", "b", "f"});
  CHECK(mcc::judge::choose_exclusions(ls, 0).empty());
}

TEST_CASE("per-layer exclusion: with no outlier, a worst layer adding over 1 % noise is still suggested") {
  std::vector<judge::LayerStat> ls{layer("only", 12, {"X"}, true, 1)};
  mcc::judge::rank_layers(ls);
  CHECK(mcc::judge::choose_exclusions(ls, 3) == std::vector<std::string>{"only"});
}

TEST_CASE("per-layer: identical tensors are exact and introduce nothing") {
  std::vector<judge::LayerStat> ls{layer("a", INFINITY, {"X"}, true, 1), layer("b", INFINITY, {"a_out"}, true, 2)};
  mcc::judge::rank_layers(ls);
  for (const auto& l : ls) {
    CHECK(std::isinf(l.snr_db()));
    CHECK(l.snr_db() > 0);
    CHECK(l.introduced_nsr == 0);
  }
  CHECK(ls[0].node == "a");  // ties keep model order
  CHECK(mcc::judge::choose_exclusions(ls, 3).empty());
}

TEST_CASE("per-layer stage option quotes names the spec grammar cannot take bare") {
  const std::string opt = mcc::judge::exclusion_stage_option({"/model/conv 1", "conv2"});
  CHECK(opt.find("\"/model/conv 1,conv2\"") != std::string::npos);
  CHECK(mcc::judge::exclusion_stage_option({"/backbone/Conv_3"}).find("=/backbone/Conv_3}") != std::string::npos);
}

TEST_CASE("per-layer stage option escapes regex metacharacters so the item names exactly that node") {
  const std::string name = "head[0]+(x)";
  const std::string opt = mcc::judge::exclusion_stage_option({name});
  // The suggestion parses as a pipeline, and its exclude item matches that node and no other.
  const auto p = mcc::transforms::Pipeline::parse(opt, mcc::transforms::builtin_passes());
  REQUIRE(p.stages().size() == 1);
  const auto items = p.stages()[0].options.get_list("exclude");
  REQUIRE(items.size() == 1);
  const mcc::transforms::NodeMatcher m(items[0], "quantize", "exclude");
  mcc::ir::Graph g;
  mcc::ir::Value& x = g.add_value("x");
  mcc::ir::Node& hit = g.add_node("Relu", "", name, {&x}, {"y"});
  mcc::ir::Node& miss = g.add_node("Relu", "", "head0x", {&x}, {"z"});
  CHECK(m.matches(hit));
  CHECK_FALSE(m.matches(miss));
}
