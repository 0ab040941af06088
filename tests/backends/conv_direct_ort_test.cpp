// f32 Conv paths against ONNX Runtime: the direct (no im2col) kernel for horizontal stride 1
// (odd widths, asymmetric pads, vertical strides, dilations, groups, 1-D), the depthwise path
// with the activation in registers (3x3/5x5, stride 1/2, odd widths), every fused epilogue
// activation (Relu, Clip after BatchNormalization, Sigmoid, SiLU, LeakyRelu, HardSigmoid,
// HardSwish), im2col rows of narrow same-width maps copied as one run, the tiled batched 2-D Transpose and f32 MaxPool rows. All cases are one model (one input and one
// output per case) so ONNX Runtime runs once; mcc runs it with 1 and 2 threads, and two 1-thread
// runs must give byte-identical outputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/npy.h"
#include "support/graph_builder.h"
#include "support/ort.h"
#include "support/paths.h"

using namespace mcc;
using namespace mcc::test;

namespace {

struct ConvCase {
  std::vector<int64_t> x;  // input dims
  int64_t m = 1, group = 1;
  std::vector<int64_t> k, strides, pads, dil;
  std::string act;  // "", Relu, BnClip, Sigmoid, SiLU, LeakyRelu, HardSigmoid, HardSwish
};

struct TransposeCase {
  std::vector<int64_t> x, perm;
};

struct MaxPoolCase {
  std::vector<int64_t> x, k, strides, pads, dil;
};

// Adds one case's nodes reading input `in`, ending in graph output "y<i>".
void add_conv_case(ir::Graph& g, int i, const ConvCase& c, uint32_t seed) {
  const std::string s = std::to_string(i);
  ir::Value& x = add_input(g, "x" + s, c.x);
  std::vector<int64_t> wd = {c.m, c.x[1] / c.group};
  for (int64_t k : c.k) wd.push_back(k);
  ir::Value& w = add_random_init(g, "w" + s, wd, seed, -0.5f, 0.5f);
  ir::Value& b = add_random_init(g, "b" + s, {c.m}, seed + 1);
  ir::Node& conv = add_node(g, "Conv", "conv" + s, {&x, &w, &b}, {"c" + s}, 13,
                            {attr_ints("kernel_shape", c.k), attr_ints("strides", c.strides),
                             attr_ints("pads", c.pads), attr_ints("dilations", c.dil),
                             attr_i("group", c.group)});
  ir::Value* v = conv.outputs[0];
  const std::string y = "y" + s;
  if (c.act.empty()) {
    // Rename by an Identity so every case's output is "y<i>".
    v = add_node(g, "Identity", "id" + s, {v}, {y}, 13).outputs[0];
  } else if (c.act == "Relu" || c.act == "Sigmoid") {
    v = add_node(g, c.act, "a" + s, {v}, {y}, 13).outputs[0];
  } else if (c.act == "SiLU") {
    ir::Value* sg = add_node(g, "Sigmoid", "sg" + s, {v}, {"sg" + s}, 13).outputs[0];
    v = add_node(g, "Mul", "a" + s, {v, sg}, {y}, 13).outputs[0];
  } else if (c.act == "LeakyRelu") {
    v = add_node(g, "LeakyRelu", "a" + s, {v}, {y}, 13, {attr_f("alpha", 0.13f)}).outputs[0];
  } else if (c.act == "HardSigmoid") {
    v = add_node(g, "HardSigmoid", "a" + s, {v}, {y}, 13,
                 {attr_f("alpha", 0.25f), attr_f("beta", 0.4f)})
            .outputs[0];
  } else if (c.act == "HardSwish") {
    v = add_node(g, "HardSwish", "a" + s, {v}, {y}, 14).outputs[0];
  } else if (c.act == "BnClip") {
    ir::Value& sc = add_random_init(g, "sc" + s, {c.m}, seed + 2, 0.5f, 1.5f);
    ir::Value& sh = add_random_init(g, "sh" + s, {c.m}, seed + 3);
    ir::Value& mu = add_random_init(g, "mu" + s, {c.m}, seed + 4);
    ir::Value& var = add_random_init(g, "var" + s, {c.m}, seed + 5, 0.5f, 2.f);
    ir::Value* bn = add_node(g, "BatchNormalization", "bn" + s, {v, &sc, &sh, &mu, &var},
                             {"bn" + s}, 13)
                        .outputs[0];
    ir::Value& lo = g.add_initializer("lo" + s, ir::Tensor::from_vector<float>({}, {0.f}));
    ir::Value& hi = g.add_initializer("hi" + s, ir::Tensor::from_vector<float>({}, {1.5f}));
    v = add_node(g, "Clip", "a" + s, {bn, &lo, &hi}, {y}, 13).outputs[0];
  }
  mark_output(g, *v);
}

void add_transpose_case(ir::Graph& g, int i, const TransposeCase& c) {
  const std::string s = std::to_string(i);
  ir::Value& x = add_input(g, "x" + s, c.x);
  mark_output(g, *add_node(g, "Transpose", "t" + s, {&x}, {"y" + s}, 13,
                           {attr_ints("perm", c.perm)})
                      .outputs[0]);
}

void add_maxpool_case(ir::Graph& g, int i, const MaxPoolCase& c) {
  const std::string s = std::to_string(i);
  ir::Value& x = add_input(g, "x" + s, c.x);
  mark_output(g, *add_node(g, "MaxPool", "p" + s, {&x}, {"y" + s}, 12,
                           {attr_ints("kernel_shape", c.k), attr_ints("strides", c.strides),
                            attr_ints("pads", c.pads), attr_ints("dilations", c.dil)})
                      .outputs[0]);
}

std::vector<ir::Tensor> run_threads(const ir::Model& m,
                                    const std::vector<std::pair<std::string, backends::RValue>>& feeds,
                                    int threads) {
  backends::Executor ex(m, backends::ExecOptions{threads});
  std::vector<ir::Tensor> out;
  for (auto& v : ex.run(feeds)) out.push_back(v.tensor);
  return out;
}

bool same_bytes(const ir::Tensor& a, const ir::Tensor& b) {
  return a.dims() == b.dims() && a.bytes().size() == b.bytes().size() &&
         std::memcmp(a.raw(), b.raw(), a.bytes().size()) == 0;
}

}  // namespace

TEST_CASE("Conv: direct, depthwise and fused-activation f32 paths, the tiled Transpose and MaxPool rows match ONNX Runtime") {
  const std::vector<ConvCase> convs = {
      // Direct kernel: 3x3 pad 1 (the YOLOX stem shape, smaller), odd width, SiLU.
      {{1, 12, 21, 37}, 16, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, "SiLU"},
      // Vertical stride 2, horizontal stride 1, asymmetric pads, horizontal dilation 2.
      {{1, 5, 19, 45}, 7, 1, {3, 3}, {2, 1}, {0, 2, 1, 1}, {1, 2}, "HardSwish"},
      // Groups, 5x5, wide rows crossing several 32-column tiles, Relu.
      {{2, 8, 11, 70}, 6, 2, {5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}, "Relu"},
      // 1-D conv.
      {{1, 3, 70}, 13, 1, {3}, {1}, {1, 1}, {1}, "Sigmoid"},
      // Output rows of exactly 16 and 17 positions, no padding; more channels than one tile row.
      {{1, 4, 9, 18}, 20, 1, {3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, "LeakyRelu"},
      {{1, 4, 9, 17}, 9, 1, {2, 2}, {1, 1}, {1, 0, 0, 1}, {2, 1}, "HardSigmoid"},
      // BatchNormalization folded, Clip in registers; no activation at all.
      {{1, 6, 20, 33}, 11, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, "BnClip"},
      {{1, 6, 20, 33}, 5, 1, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, ""},
      // Horizontal stride 2 (im2col + GEMM) with a fused SiLU.
      {{1, 3, 30, 41}, 10, 1, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, "SiLU"},
      // Stride 2 gathered 16 columns at a time: wide odd rows, asymmetric pads, dilation 2.
      {{1, 3, 17, 71}, 8, 1, {5, 5}, {2, 2}, {2, 1, 0, 2}, {1, 2}, "Relu"},
      // Depthwise 3x3/5x5, stride 1/2, odd widths, epilogue in registers.
      {{1, 7, 15, 33}, 7, 7, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, "HardSigmoid"},
      {{1, 4, 23, 50}, 4, 4, {5, 5}, {2, 2}, {2, 2, 2, 2}, {1, 1}, "SiLU"},
      {{1, 5, 13, 19}, 5, 5, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, "Sigmoid"},
      {{1, 6, 12, 37}, 6, 6, {3, 3}, {1, 1}, {1, 0, 1, 2}, {1, 1}, "HardSwish"},
      // Narrow "same"-width maps (im2col rows copied as one shifted run): 1x3 with horizontal
      // padding, 3x1 without, 5x5 pad 2 on a batch of 2, dilation 2, asymmetric horizontal pads,
      // groups.
      {{1, 24, 9, 7}, 10, 1, {1, 3}, {1, 1}, {0, 1, 0, 1}, {1, 1}, ""},
      {{1, 8, 10, 5}, 12, 1, {3, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, "Relu"},
      {{2, 3, 14, 14}, 16, 1, {5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}, ""},
      {{1, 4, 9, 11}, 6, 1, {3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, "SiLU"},
      {{1, 5, 6, 9}, 7, 1, {3, 3}, {1, 1}, {1, 0, 1, 2}, {1, 1}, ""},
      {{1, 6, 7, 10}, 4, 2, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, "HardSwish"},
  };
  const std::vector<TransposeCase> transposes = {
      {{1, 85, 349}, {0, 2, 1}}, {{37, 300}, {1, 0}}, {{2, 5, 7, 9}, {0, 2, 3, 1}},
      {{3, 4, 5}, {2, 0, 1}},    {{2, 3, 33, 1}, {0, 3, 2, 1}}};
  // MaxPool: stride-1 rows 16 outputs at a time (the YOLOX SPP shapes, odd widths, dilation).
  const std::vector<MaxPoolCase> pools = {{{1, 3, 13, 13}, {13, 13}, {1, 1}, {6, 6, 6, 6}, {1, 1}},
                                          {{1, 2, 9, 45}, {5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}},
                                          {{2, 2, 7, 40}, {3, 3}, {1, 1}, {1, 0, 0, 2}, {1, 2}},
                                          {{1, 2, 8, 35}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}}};
  ir::Model m = empty_model(14);
  int i = 0;
  for (const ConvCase& c : convs) {
    add_conv_case(*m.graph, i, c, 100u + 10u * static_cast<uint32_t>(i));
    ++i;
  }
  for (const TransposeCase& t : transposes) add_transpose_case(*m.graph, i++, t);
  for (const MaxPoolCase& p : pools) add_maxpool_case(*m.graph, i++, p);

  // Inputs in [-3, 3): both sides of every activation's bends.
  std::vector<std::pair<std::string, backends::RValue>> feeds;
  for (const ir::Value* in : m.graph->inputs) {
    if (in->initializer) continue;
    feeds.emplace_back(in->name, backends::RValue::of(random_tensor(*in->shape.static_dims(),
                                                                    7u + static_cast<uint32_t>(feeds.size()),
                                                                    -3.f, 3.f)));
  }
  const auto one = run_threads(m, feeds, 1);
  const auto again = run_threads(m, feeds, 1);
  const auto two = run_threads(m, feeds, 2);
  REQUIRE(one.size() == static_cast<size_t>(i));
  for (size_t o = 0; o < one.size(); ++o) {
    CAPTURE(o);
    CHECK(same_bytes(one[o], again[o]));
    CHECK(max_abs_diff({one[o]}, {two[o]}) <= 1e-5);
  }

  const bool have_ort = have_onnxruntime();
  WARN_MESSAGE(have_ort, "Conv paths not compared with ONNX Runtime: " << kOrtMissing);
  if (!have_ort) return;
  TempDir tmp("mcc-conv-direct");
  const std::string path = (tmp.path / "convs.onnx").string();
  ir::save_model(m, path);
  const auto sample = tmp.path / "golden" / "s0";
  std::filesystem::create_directories(sample);
  for (const auto& [name, v] : feeds) ir::save_npy(v.tensor, (sample / (name + ".npy")).string());
  REQUIRE_MESSAGE(write_ort_outputs(path, (tmp.path / "golden").string()),
                  "ONNX Runtime failed on " << path);
  for (size_t o = 0; o < one.size(); ++o) {
    CAPTURE(o);
    const ir::Tensor ref = ir::load_npy((sample / ("output_" + std::to_string(o) + ".npy")).string());
    REQUIRE(ref.dims() == one[o].dims());
    auto got = one[o].data<float>();
    auto want = ref.data<float>();
    double worst = 0;
    for (size_t k = 0; k < got.size(); ++k)
      worst = std::max(worst, std::fabs(static_cast<double>(got[k]) - want[k]) /
                                  (1.0 + std::fabs(static_cast<double>(want[k]))));
    CHECK(worst < 2e-5);
  }
}
