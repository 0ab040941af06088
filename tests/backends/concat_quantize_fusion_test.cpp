// Concat -> QuantizeLinear runs as one kernel on the cpu backend (concat_quantize_fusion): the
// quantized bytes equal the two nodes run one by one, for u8 and s8, a batch of two (two outer
// rows) and two threads, also when the inputs carry no declared type but their producers make
// them f32 (known_f32); the fusion is not offered for per-axis scales, a Concat output that is
// also a graph output, or an input of unknown type.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "backends/cpu/kernels/concat_quantize_fusion.h"
#include "support/graph_builder.h"

using namespace mcc;

namespace {

std::string model_text(const char* axis, const char* out_dims, const char* zp_type, const char* zp, bool cat_is_output,
                       const char* scale = "float s = {0.0173}") {
  std::string t = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3,4,5] a, float[2,1,4,5] b, float[2,6,4,5] c) => ()";
  t += std::string(zp_type) + out_dims + " y";
  if (cat_is_output) t += ", float[2,10,4,5] cat";
  t += ") <" + std::string(scale) + ", " + zp_type + " z = {" + zp + "}> {\n";
  t += std::string("  cat = Concat<axis = ") + axis + ">(a, b, c)\n  y = QuantizeLinear(cat, s, z)\n}\n";
  return t;
}

std::vector<ir::Tensor> run(const ir::Model& m, bool fuse, int threads) {
  backends::ExecOptions o;
  o.threads = threads;
  o.fuse = fuse;
  backends::Executor ex(m, o);
  // Inputs in [-3, 3]: values below and above the u8/s8 range after the scale saturate.
  auto feeds = test::random_feeds(m, 5);
  for (auto& [name, v] : feeds) {
    auto d = v.tensor.mutable_data<float>();
    for (float& x : d) x = x * 6.f - 3.f;
  }
  std::vector<ir::Tensor> out;
  for (auto& v : ex.run(feeds)) out.push_back(v.tensor);
  return out;
}

const ir::Node* concat_node(const ir::Model& m) {
  for (const ir::Node* n : m.graph->nodes())
    if (n->is("Concat")) return n;
  return nullptr;
}

}  // namespace

TEST_CASE("concat quantize fusion: the same bytes as Concat then QuantizeLinear") {
  struct Case {
    const char* name;
    const char* axis;
    const char* dims;
    const char* zp_type;
    const char* zp;
  };
  const Case cases[] = {{"u8, channel axis", "1", "[2,10,4,5]", "uint8", "128"},
                        {"s8, channel axis", "1", "[2,10,4,5]", "int8", "-3"},
                        {"u8, negative axis", "-3", "[2,10,4,5]", "uint8", "7"}};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const ir::Model m = test::parse_onnx_text(model_text(c.axis, c.dims, c.zp_type, c.zp, false));
    const ir::Node* cat = concat_node(m);
    REQUIRE(cat != nullptr);
    const auto fk = backends::cpu::fuse_concat_quantize(*cat);
    REQUIRE(fk.has_value());
    CHECK(fk->output == m.graph->outputs[0]);
    const auto want = run(m, false, 1);
    for (int threads : {1, 2}) {
      CAPTURE(threads);
      const auto got = run(m, true, threads);
      REQUIRE(got.size() == 1);
      CHECK(got[0].dims() == want[0].dims());
      CHECK(got[0].dtype() == want[0].dtype());
      CHECK(std::memcmp(got[0].raw(), want[0].raw(), want[0].bytes().size()) == 0);
    }
  }
}

TEST_CASE("concat quantize fusion: not offered for per-axis scales or a Concat output the graph returns") {
  const ir::Model returned = test::parse_onnx_text(model_text("1", "[2,10,4,5]", "uint8", "128", true));
  CHECK_FALSE(backends::cpu::fuse_concat_quantize(*concat_node(returned)).has_value());
  // A one-element rank-1 scale is still per-tensor: offered.
  const ir::Model one = test::parse_onnx_text(model_text("1", "[2,10,4,5]", "uint8", "128", false, "float[1] s = {0.02}"));
  CHECK(backends::cpu::fuse_concat_quantize(*concat_node(one)).has_value());
  std::string t = model_text("1", "[2,10,4,5]", "uint8", "128", false, "float[10] s = {1,2,3,4,5,6,7,8,9,10}");
  t.replace(t.find("uint8 z = {128}"), std::string("uint8 z = {128}").size(), "uint8[10] z = {1,2,3,4,5,6,7,8,9,10}");
  const ir::Model per_channel = test::parse_onnx_text(t);
  CHECK_FALSE(backends::cpu::fuse_concat_quantize(*concat_node(per_channel)).has_value());
  // Still runs (node by node) with the per-channel quantization.
  CHECK(run(per_channel, true, 1)[0].dtype() == ir::DType::U8);
}

TEST_CASE("concat quantize fusion: inputs of no declared type whose producers make them f32") {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3,4,5] a, float[2,1,4,5] b, float[2,6,4,5] c, int32[2,6,4,5] k) => (uint8[2,10,4,5] y, uint8[2,10,4,5] y2)
    <float s = {0.0173}, uint8 z = {128}, float sb = {0.05}, uint8 zb = {100}> {
  ra = Relu(a)
  qb = QuantizeLinear(b, sb, zb)
  db = DequantizeLinear(qb, sb, zb)
  mc = Mul(c, c)
  cat = Concat<axis = 1>(ra, db, mc)
  y = QuantizeLinear(cat, s, z)
  kc = Cast<to = 1>(k)
  cat2 = Concat<axis = 1>(ra, db, kc)
  y2 = QuantizeLinear(cat2, s, z)
}
)";
  const ir::Model m = test::parse_onnx_text(text);
  const ir::Node* cat = nullptr;
  const ir::Node* cat2 = nullptr;
  for (const ir::Node* n : m.graph->nodes())
    if (n->is("Concat")) (cat ? cat2 : cat) = n;
  REQUIRE(cat2 != nullptr);
  for (const ir::Value* v : cat->inputs) REQUIRE_FALSE(v->has_type);  // nothing declared: inferred
  const auto fk = backends::cpu::fuse_concat_quantize(*cat);
  REQUIRE(fk.has_value());
  CHECK_FALSE(backends::cpu::fuse_concat_quantize(*cat2).has_value());  // Cast: not followed
  backends::ExecOptions o;
  o.threads = 2;
  auto feeds = test::random_feeds(m, 9);
  std::vector<ir::Tensor> got, want;
  for (bool fuse : {true, false}) {
    o.fuse = fuse;
    backends::Executor ex(m, o);
    for (auto& v : ex.run(feeds)) (fuse ? got : want).push_back(v.tensor);
  }
  REQUIRE(got.size() == 2);
  CHECK(std::memcmp(got[0].raw(), want[0].raw(), want[0].bytes().size()) == 0);
  CHECK(std::memcmp(got[1].raw(), want[1].raw(), want[1].bytes().size()) == 0);
}
