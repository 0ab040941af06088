// Empty-cache prefill feeds (ir/decoder_feeds.h): a KV-cache decoder's sample folder holding only
// input_ids binds with the cache inputs as [batch, heads, 0, head_dim] zeros, attention_mask as ones
// and position_ids as 0..seq-1; inputs the sample gives are kept; a model without a past-cache
// input is left alone; a sample without input_ids is refused naming the input; the executor runs
// the bound sample (Concat of an empty cache with the new keys).
#include <doctest/doctest.h>

#include <string>

#include "backends/executor.h"
#include "io/samples.h"
#include "ir/decoder_feeds.h"
#include "ir/errors.h"
#include "ir/npy.h"
#include "ir/sample_data.h"
#include "support/graph_builder.h"
#include "support/paths.h"

namespace {

using namespace mcc;

// input_ids [batch, seq], attention_mask [batch, total], position_ids [batch, seq],
// past_key_values.0.key [batch, 2, past, 4]  ->  present.0.key = Concat(past, k) on axis 2, where
// k is input_ids cast to float and tiled to [batch, 2, seq, 4]; plus the mask's and the positions'
// sums (so the test sees what was fed).
ir::Value& symbolic_input(ir::Graph& g, const std::string& name, ir::DType dt, std::vector<ir::Dim> dims) {
  ir::Value& v = test::add_input(g, name, {}, dt);
  v.shape.dims = std::move(dims);
  return v;
}

ir::Model kv_model() {
  using ir::Dim;
  ir::Model m = test::empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value& ids = symbolic_input(g, "input_ids", ir::DType::I64, {Dim::symbol("batch"), Dim::symbol("seq")});
  ir::Value& mask = symbolic_input(g, "attention_mask", ir::DType::I64, {Dim::symbol("batch"), Dim::symbol("total")});
  ir::Value& pos = symbolic_input(g, "position_ids", ir::DType::I64, {Dim::symbol("batch"), Dim::symbol("seq")});
  ir::Value& past = symbolic_input(g, "past_key_values.0.key", ir::DType::F32,
                                   {Dim::symbol("batch"), Dim::of(2), Dim::symbol("past"), Dim::of(4)});
  ir::Value& rep = g.add_initializer("rep", ir::Tensor::from_vector<int64_t>({4}, {1, 2, 1, 4}));
  ir::Value& axes = g.add_initializer("axes", ir::Tensor::from_vector<int64_t>({2}, {1, 3}));
  ir::Node& cast = test::add_node(g, "Cast", "cast", {&ids}, {"f"}, 13, {test::attr_i("to", 1)});
  ir::Node& unsq = test::add_node(g, "Unsqueeze", "unsq", {cast.outputs[0], &axes}, {"u"}, 13);
  ir::Node& tile = test::add_node(g, "Tile", "tile", {unsq.outputs[0], &rep}, {"k"}, 13);
  ir::Node& cat = test::add_node(g, "Concat", "cat", {&past, tile.outputs[0]}, {"present.0.key"}, 13,
                                 {test::attr_i("axis", 2)});
  ir::Node& ms = test::add_node(g, "ReduceSum", "ms", {&mask}, {"mask_sum"}, 13, {test::attr_i("keepdims", 0)});
  ir::Node& ps = test::add_node(g, "ReduceSum", "ps", {&pos}, {"pos_sum"}, 13, {test::attr_i("keepdims", 0)});
  test::mark_output(g, *cat.outputs[0]);
  test::mark_output(g, *ms.outputs[0], ir::DType::I64);
  test::mark_output(g, *ps.outputs[0], ir::DType::I64);
  return m;
}

std::string write_sample(const test::TempDir& dir, const std::string& name, bool with_mask) {
  const auto d = dir.path / name;
  std::filesystem::create_directories(d);
  ir::save_npy(ir::Tensor::from_vector<int64_t>({1, 3}, {5, 6, 7}), (d / "input_ids.npy").string());
  if (with_mask) ir::save_npy(ir::Tensor::from_vector<int64_t>({1, 3}, {0, 1, 1}), (d / "attention_mask.npy").string());
  return d.string();
}

}  // namespace

TEST_CASE("decoder feeds: a sample of input_ids alone binds as an empty-cache prefill and runs") {
  const ir::Model m = kv_model();
  test::TempDir dir("mcc-kv");
  ir::BoundSample s = ir::bind_sample(*m.graph, ir::load_sample(write_sample(dir, "s0", false), false));
  CHECK(s.defaulted == std::vector<std::string>{"attention_mask", "position_ids", "past_key_values.0.key"});
  REQUIRE(s.feeds.size() == 4);
  auto find = [&](const std::string& n) -> const ir::Tensor& {
    for (const auto& [name, t] : s.feeds)
      if (name == n) return t;
    FAIL("no feed " << n);
    throw InternalError("unreachable");
  };
  CHECK(find("past_key_values.0.key").dims() == std::vector<int64_t>{1, 2, 0, 4});
  CHECK(find("attention_mask").dims() == std::vector<int64_t>{1, 3});
  CHECK(find("position_ids").data<int64_t>()[2] == 2);

  backends::Executor ex(m, backends::ExecOptions{1});
  const auto outs = ex.run(io::to_feeds(s));
  REQUIRE(outs.size() == 3);
  CHECK(outs[0].tensor.dims() == std::vector<int64_t>{1, 2, 3, 4});
  CHECK(outs[0].tensor.data<float>()[4] == 6.f);  // row 1 of head 0: input_ids[1]
  CHECK(outs[1].tensor.data<int64_t>()[0] == 3);  // ones
  CHECK(outs[2].tensor.data<int64_t>()[0] == 3);  // 0 + 1 + 2
}

TEST_CASE("decoder feeds: inputs the sample gives are kept; other models and missing input_ids") {
  const ir::Model m = kv_model();
  test::TempDir dir("mcc-kv");
  ir::BoundSample s = ir::bind_sample(*m.graph, ir::load_sample(write_sample(dir, "s0", true), false));
  CHECK(s.defaulted == std::vector<std::string>{"position_ids", "past_key_values.0.key"});
  backends::Executor ex(m, backends::ExecOptions{1});
  CHECK(ex.run(io::to_feeds(s))[1].tensor.data<int64_t>()[0] == 2);  // the sample's own mask

  SUBCASE("a model without a past-cache input gets nothing filled") {
    ir::Model plain = test::empty_model(13);
    ir::Value& ids = test::add_input(*plain.graph, "input_ids", {1, 3}, ir::DType::I64);
    ir::Value& mask = test::add_input(*plain.graph, "attention_mask", {1, 3}, ir::DType::I64);
    test::mark_output(*plain.graph, *test::add_node(*plain.graph, "Add", "add", {&ids, &mask}, {"y"}, 13).outputs[0],
                      ir::DType::I64);
    ir::BoundSample p = ir::bind_sample(*plain.graph, ir::load_sample(write_sample(dir, "p0", false), false));
    CHECK(p.defaulted.empty());
    CHECK(p.feeds.size() == 1);
  }
  SUBCASE("without input_ids the left-out inputs cannot be made: ModelError naming one") {
    const auto d = dir.path / "n0";
    std::filesystem::create_directories(d);
    ir::save_npy(ir::Tensor::from_vector<int64_t>({1, 3}, {1, 1, 1}), (d / "attention_mask.npy").string());
    try {
      (void)ir::bind_sample(*m.graph, ir::load_sample(d.string(), false));
      FAIL("expected a ModelError");
    } catch (const ModelError& e) {
      CHECK(std::string(e.what()).find("position_ids") != std::string::npos);
      CHECK(std::string(e.what()).find("input_ids") != std::string::npos);
    }
  }
}
