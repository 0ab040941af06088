// quantize{mode=weight_only}: block-wise round to nearest (exact codes and scales of a small
// matrix), code packing, GPTQ against RTN on correlated inputs (proxy loss and output error on
// held-out inputs), GPTQ on a diagonal Hessian equal to RTN, the graph forms (DequantizeLinear
// with block_size at opset 21; com.microsoft.MatMulNBits), what stays float and why, replay from
// the record without data, and the option checks.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "ir/errors.h"
#include "support/paths.h"
#include "transforms/quantize/block_quant.h"
#include "transforms/quantize/gptq.h"
#include "transforms/quantize/quantize.h"
#include "transforms/quantize/quantize_test_util.h"
#include "transforms/quantize/weight_only_block.h"
#include "transforms/pipeline/pass_registry.h"
#include "transforms/pipeline/pipeline.h"

using namespace mcc;
using namespace mcc::transforms::quantize;
using json = nlohmann::ordered_json;

namespace {

std::vector<std::pair<std::string, backends::RValue>> feeds(uint32_t seed) {
  std::vector<std::pair<std::string, backends::RValue>> f;
  for (auto& [n, t] : test::weight_only_inputs(seed)) f.emplace_back(n, backends::RValue::of(t));
  return f;
}

/// Sum of squared differences of output 0 (Y) over a few held-out inputs.
double output_sse(const ir::Model& q, const ir::Model& ref) {
  double sse = 0;
  for (uint32_t s = 900; s < 904; ++s) {
    const auto a = test::run_cpu(q, feeds(s)), b = test::run_cpu(ref, feeds(s));
    for (int64_t i = 0; i < a[0].numel(); ++i) {
      const double d = a[0].data<float>()[i] - b[0].data<float>()[i];
      sse += d * d;
    }
  }
  return sse;
}

const json* point(const json& rec, const std::string& tensor) {
  for (const auto& p : rec["points"])
    if (p["tensor"] == tensor) return &p;
  return nullptr;
}

}  // namespace

TEST_CASE("block_quant: round to nearest per block of rows, symmetric int4 and asymmetric uint4") {
  // W [4, 2], blocks of 2 rows: column 0 = {1, -3.5 | 7, 3.5}, column 1 = {0, 0 | 7, 14}
  // (values whose quotients by the scales are exact, so ties are real ties).
  const float w[] = {1.f, 0.f, -3.5f, 0.f, 7.f, 7.f, 3.5f, 14.f};
  BlockFormat f;
  f.bits = 4;
  f.block_size = 2;
  const BlockQuantized q = rtn_quantize(w, 4, 2, f);
  REQUIRE(q.scale.size() == 4);
  CHECK(q.scale[0] == doctest::Approx(0.5));   // block 0, column 0: 3.5 / 7
  CHECK(q.scale[1] == 1.f);                    // block 0, column 1: zeros
  CHECK(q.scale[2] == 1.f);                    // 7 / 7
  CHECK(q.scale[3] == doctest::Approx(2.0));   // 14 / 7
  CHECK(q.codes == std::vector<int32_t>{2, 0, -7, 0, 7, 4, 4, 7});  // 3.5 / 1 and 7 / 2: ties to the even 4
  for (int32_t z : q.zero_point) CHECK(z == 0);
  f.zero_point = true;
  const BlockQuantized u = rtn_quantize(w, 4, 2, f);
  CHECK(u.scale[0] == doctest::Approx(4.5 / 15));  // [-3.5, 1]
  CHECK(u.zero_point[0] == 12);                    // round(3.5 / 0.3) = 11.67 -> 12
  CHECK(u.zero_point[3] == 0);                     // [0, 14]: zero at code 0
  for (int32_t c : u.codes) CHECK((c >= 0 && c <= 15));
  // Dequantized values are within half a step of the weights.
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t n = 0; n < 2; ++n)
      CHECK(std::abs(dequantized(u, k, n, 2) - w[k * 2 + n]) <= 0.5f * u.scale[static_cast<size_t>((k / 2) * 2 + n)] + 1e-6f);
}

TEST_CASE("block_quant: 4-bit codes pack two per byte, low nibble first; a wrong length is refused") {
  const std::vector<int32_t> codes{-8, 7, -1, 0, 3};
  const std::string packed = pack_codes(codes, ir::DType::I4);
  REQUIRE(packed.size() == 3);
  CHECK(static_cast<uint8_t>(packed[0]) == 0x78);  // -8 -> 0x8 (low), 7 -> 0x7 (high)
  CHECK(static_cast<uint8_t>(packed[1]) == 0x0f);  // -1 -> 0xf (low), 0 (high)
  CHECK(unpack_codes(packed, ir::DType::I4, 5) == codes);
  const std::vector<int32_t> u{15, 0, 9};
  CHECK(unpack_codes(pack_codes(u, ir::DType::U4), ir::DType::U4, 3) == u);
  const std::vector<int32_t> b{-128, 127, 5};
  CHECK(unpack_codes(pack_codes(b, ir::DType::I8), ir::DType::I8, 3) == b);
  CHECK_THROWS_AS(unpack_codes(packed, ir::DType::I4, 7), ModelError);
  CHECK_THROWS_AS(unpack_codes(packed, ir::DType::I8, 5), ModelError);
}

TEST_CASE("gptq: lower proxy loss than RTN on correlated inputs; equal to RTN on a diagonal Hessian") {
  const int64_t K = 64, N = 24, T = 256;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  // Inputs of rank 8 plus a little noise: strongly correlated features.
  Eigen::MatrixXf Z(T, 8), Mx(8, K);
  for (int i = 0; i < Z.size(); ++i) Z.data()[i] = nd(rng);
  for (int i = 0; i < Mx.size(); ++i) Mx.data()[i] = nd(rng);
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> X = Z * Mx;
  for (int i = 0; i < X.size(); ++i) X.data()[i] += 0.05f * nd(rng);
  std::vector<float> w(static_cast<size_t>(K * N));
  for (float& v : w) v = nd(rng);
  HessianAccumulator h(K);
  h.add(X.data(), T / 2, K);
  h.add(X.data() + (T / 2) * K, T / 2, K);  // two chunks add up
  CHECK(h.tokens == T);
  CHECK_THROWS_AS(h.add(X.data(), 1, K + 1), ModelError);
  BlockFormat f;
  f.block_size = 16;
  for (bool act_order : {false, true}) {
    GptqOptions o;
    o.act_order = act_order;
    o.lazy_block = 24;  // not a multiple of the block size: batches and blocks interleave
    const GptqResult r = gptq_quantize(w.data(), K, N, h.hessian(), f, o);
    MESSAGE("act_order " << act_order << ": gptq loss " << r.loss << ", rtn loss " << r.rtn_loss);
    CHECK(r.rtn_loss > 0);
    CHECK(r.loss < 0.7 * r.rtn_loss);
    CHECK(r.loss == doctest::Approx(proxy_loss(w.data(), r.q, 16, h.hessian())));
    for (int32_t c : r.q.codes) CHECK((c >= -8 && c <= 7));
    // Deterministic: the same inputs give the same codes.
    CHECK(gptq_quantize(w.data(), K, N, h.hessian(), f, o).q.codes == r.q.codes);
  }
  // A diagonal Hessian couples no rows: nothing to compensate, the codes are RTN's.
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(K, K);
  for (int64_t k = 0; k < K; ++k) D(k, k) = 1 + k;
  const GptqResult d = gptq_quantize(w.data(), K, N, D, f, GptqOptions{});
  CHECK(d.q.codes == rtn_quantize(w.data(), K, N, f).codes);
  CHECK(d.loss == doctest::Approx(d.rtn_loss));
}

TEST_CASE("quantize mode=weight_only rtn: int4 blocks behind DequantizeLinear(block_size), opset 21, replay") {
  ir::Model m = test::weight_only_block();
  const ir::Model ref = test::weight_only_block();
  const auto res = test::run_quantize(m, {{"mode", "weight_only"}, {"block_size", "16"}, {"weight_zero_point", "false"}});
  CHECK(m.opset("") == 21);
  CHECK(m.ir_version == 10);
  CHECK(test::count_ops(m, "DequantizeLinear") == 2);  // M and W
  CHECK(test::count_ops(m, "QuantizeLinear") == 0);
  CHECK(test::count_ops(m, "MatMul") == 2);
  CHECK(test::count_ops(m, "Gemm") == 1);
  const ir::Graph& g = *m.graph;
  const ir::Value* wq = g.find_value("W_quantized");
  REQUIRE(wq != nullptr);
  CHECK(wq->initializer->dtype() == ir::DType::I4);
  CHECK(wq->initializer->dims() == std::vector<int64_t>{64, 40});
  CHECK(wq->initializer->nbytes() == 64 * 40 / 2);
  CHECK(g.find_value("W_scale")->initializer->dims() == std::vector<int64_t>{4, 40});
  CHECK(g.find_value("W_zero_point") == nullptr);  // symmetric: no zero point input
  const ir::Value* w = g.find_value("W");
  REQUIRE(w != nullptr);
  REQUIRE(w->producer != nullptr);
  CHECK(w->producer->attr_int("block_size", 0) == 16);
  CHECK(w->producer->attr_int("axis", -1) == 0);
  CHECK(res.stats["mode"] == "weight_only");
  CHECK(res.stats["layers_weight_only"] == 2);
  CHECK(res.record["algorithm"] == "rtn");
  CHECK(res.record["weight_format"] == "qdq");
  const json* pw = point(res.record, "W");
  REQUIRE(pw != nullptr);
  CHECK((*pw)["dtype"] == "i4");
  CHECK((*pw)["block_size"] == 16);
  CHECK((*pw)["scale_count"] == 160);
  CHECK_FALSE(pw->contains("zero_point_base64"));  // symmetric: every zero point is 0
  CHECK_FALSE(pw->contains("codes"));  // RTN codes follow from the weights and scales
  bool fc_listed = false;
  for (const auto& s : res.record["skipped_nodes"])
    fc_listed = fc_listed || (s["node"] == "fc" && s["reason"] == "mode=weight_only quantizes MatMul only");
  CHECK(fc_listed);
  // Close to the float model: int4 with blocks of 16.
  const auto got = test::run_cpu(m, feeds(3)), want = test::run_cpu(ref, feeds(3));
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < got[0].numel(); ++i) {
    const double a = got[0].data<float>()[i], b = want[0].data<float>()[i];
    ab += a * b, aa += a * a, bb += b * b;
  }
  MESSAGE("int4 rtn block 16: output cosine vs float " << ab / std::sqrt(aa * bb));
  CHECK(ab / std::sqrt(aa * bb) > 0.98);
  CHECK(test::max_abs_diff({got[1]}, {want[1]}) == 0.0);  // the Gemm is untouched
  // Replay with no data: the same model.
  ir::Model again = test::weight_only_block();
  const json rec = res.record;
  test::run_quantize(again, {{"mode", "weight_only"}, {"block_size", "16"}}, &rec);
  CHECK(test::max_abs_diff(test::run_cpu(again, feeds(4)), test::run_cpu(m, feeds(4))) == 0.0);
}

TEST_CASE("quantize mode=weight_only gptq: calibrated Hessians, codes recorded, beats RTN on held-out inputs, replay") {
  test::TempDir calib("mcc-wo-calib");
  test::write_weight_only_samples(calib.path, 16, 10);
  const ir::Model ref = test::weight_only_block();
  ir::Model rtn = test::weight_only_block(), gq = test::weight_only_block();
  test::run_quantize(rtn, {{"mode", "weight_only"}, {"block_size", "16"}, {"exclude", "mix"}});
  const auto res = test::run_quantize(gq, {{"mode", "weight_only"}, {"block_size", "16"}, {"exclude", "mix"},
                                           {"algorithm", "gptq"}, {"calib", calib.path.string()}});
  CHECK(res.stats["calibration_samples"] == 16);
  CHECK(res.record["calibration"]["method"] == "gptq");
  CHECK(res.record["calibration"]["samples"] == 16);
  REQUIRE(res.record["gptq"]["losses"].size() == 1);
  const double ratio = res.record["gptq"]["losses"][0]["ratio"].get<double>();
  MESSAGE("gptq/rtn proxy loss on calibration inputs: " << ratio);
  CHECK(ratio < 0.9);
  const json* pw = point(res.record, "W");
  REQUIRE(pw != nullptr);
  CHECK((*pw)["method"] == "gptq");
  CHECK((*pw)["codes"].get<std::string>().size() == (64 * 40 / 2 + 2) / 3 * 4);  // base64 of the packed codes
  const double e_rtn = output_sse(rtn, ref), e_gptq = output_sse(gq, ref);
  MESSAGE("held-out output SSE: rtn " << e_rtn << ", gptq " << e_gptq);
  CHECK(e_gptq < 0.9 * e_rtn);
  // Replay from the record, with no calibration data: identical outputs.
  ir::Model again = test::weight_only_block();
  const json rec = res.record;
  test::run_quantize(again, {{"mode", "weight_only"}, {"algorithm", "gptq"}}, &rec);
  CHECK(test::max_abs_diff(test::run_cpu(again, feeds(5)), test::run_cpu(gq, feeds(5))) == 0.0);
  // A damaged record is refused, not applied.
  json bad = res.record;
  for (auto& p : bad["points"])
    if (p["tensor"] == "W") p["codes"] = "AAAA";
  ir::Model m3 = test::weight_only_block();
  CHECK_THROWS_AS(test::run_quantize(m3, {{"mode", "weight_only"}}, &bad), ModelError);
}

TEST_CASE("quantize mode=weight_only: uint4 with zero points, int8 blocks, and the MatMulNBits form") {
  SUBCASE("weight_zero_point=true: uint4 codes and uint4 zero points") {
    ir::Model m = test::weight_only_block();
    test::run_quantize(m, {{"mode", "weight_only"}, {"weight_zero_point", "true"}});
    CHECK(m.graph->find_value("W_quantized")->initializer->dtype() == ir::DType::U4);
    const ir::Value* z = m.graph->find_value("W_zero_point");
    REQUIRE(z != nullptr);
    CHECK(z->initializer->dtype() == ir::DType::U4);
    CHECK(z->initializer->dims() == std::vector<int64_t>{2, 40});  // K 64 / block 32
  }
  SUBCASE("bits=8") {
    ir::Model m = test::weight_only_block();
    test::run_quantize(m, {{"mode", "weight_only"}, {"bits", "8"}, {"block_size", "64"}});
    CHECK(m.graph->find_value("W_quantized")->initializer->dtype() == ir::DType::U8);  // zero points by default
    CHECK(m.graph->find_value("W_scale")->initializer->dims() == std::vector<int64_t>{1, 40});
  }
  SUBCASE("bits=8 weight_zero_point=false") {
    ir::Model m = test::weight_only_block();
    test::run_quantize(m, {{"mode", "weight_only"}, {"bits", "8"}, {"block_size", "64"}, {"weight_zero_point", "false"}});
    CHECK(m.graph->find_value("W_quantized")->initializer->dtype() == ir::DType::I8);
    CHECK(m.graph->find_value("W_zero_point") == nullptr);
    CHECK(m.graph->find_value("W_scale")->initializer->dims() == std::vector<int64_t>{1, 40});
  }
  SUBCASE("weight_format=matmul_nbits: MatMulNBits nodes keep the MatMul names and outputs; opset unchanged") {
    ir::Model m = test::weight_only_block();
    const auto res = test::run_quantize(m, {{"mode", "weight_only"}, {"weight_format", "matmul_nbits"}, {"weight_zero_point", "true"}});
    CHECK(m.opset("") == 17);
    CHECK(m.opset("com.microsoft") == 1);
    CHECK(test::count_ops(m, "MatMul") == 0);
    CHECK(test::count_ops(m, "MatMulNBits") == 2);
    const ir::Value* y = m.graph->find_value("Y");
    REQUIRE(y != nullptr);
    REQUIRE(y->producer != nullptr);
    CHECK(y->producer->name == "proj");
    CHECK(y->producer->domain == "com.microsoft");
    CHECK(y->producer->attr_int("K", 0) == 64);
    CHECK(y->producer->attr_int("N", 0) == 40);
    CHECK(y->producer->attr_int("bits", 0) == 4);
    CHECK(y->producer->attr_int("block_size", 0) == 32);
    CHECK(m.graph->find_value("W_quantized")->initializer->dims() == std::vector<int64_t>{40, 2, 16});
    CHECK(m.graph->find_value("W_scales")->initializer->dims() == std::vector<int64_t>{80});
    CHECK(m.graph->find_value("W_zero_points")->initializer->dims() == std::vector<int64_t>{40});  // 2 blocks: one byte per column
    CHECK(res.record["weight_format"] == "matmul_nbits");
    ir::Model again = test::weight_only_block();
    const json rec = res.record;
    test::run_quantize(again, {{"mode", "weight_only"}}, &rec);
    CHECK(test::count_ops(again, "MatMulNBits") == 2);
  }
}

TEST_CASE("quantize mode=weight_only defaults: uint4 with zero points over each block's full range, no range search") {
  // ONNX Runtime MatMulNBitsQuantizer's round to nearest (is_symmetric=False): per block,
  // s = (max(0, hi) - min(0, lo)) / 15, z = round(-min(0, lo) / s). Clipping each block's largest
  // weights for a lower squared error (scale_search) or symmetric int4 cost SmolLM2-135M at block
  // 128 perplexity 36.5 -> 45.7 or 52.6 (fp32 23.7).
  auto bytes_of = [](const ir::Model& model, const char* name) {
    const auto b = model.graph->find_value(name)->initializer->bytes();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  };
  ir::Model m = test::weight_only_block();
  const std::vector<float> w(m.graph->find_value("W")->initializer->data<float>().begin(),
                             m.graph->find_value("W")->initializer->data<float>().end());
  const auto res = test::run_quantize(m, {{"mode", "weight_only"}, {"block_size", "16"}});
  REQUIRE(m.graph->find_value("W_quantized") != nullptr);
  CHECK(m.graph->find_value("W_quantized")->initializer->dtype() == ir::DType::U4);
  REQUIRE(m.graph->find_value("W_zero_point") != nullptr);
  const json* pw = point(res.record, "W");
  REQUIRE(pw != nullptr);
  CHECK((*pw)["dtype"] == "u4");
  const auto scale = m.graph->find_value("W_scale")->initializer->data<float>();
  const std::vector<int32_t> zp = unpack_codes(bytes_of(m, "W_zero_point"), ir::DType::U4, 4 * 40);
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t n = 0; n < 40; ++n) {
      float lo = 0, hi = 0;
      for (int64_t k = b * 16; k < b * 16 + 16; ++k) lo = std::min(lo, w[k * 40 + n]), hi = std::max(hi, w[k * 40 + n]);
      const float s = static_cast<float>((static_cast<double>(hi) - lo) / 15);
      CHECK(scale[b * 40 + n] == s);
      CHECK(zp[b * 40 + n] == static_cast<int32_t>(std::nearbyint(-static_cast<double>(lo) / s)));
    }
  // The same as asking for it, and unlike the range search.
  ir::Model full = test::weight_only_block(), searched = test::weight_only_block();
  test::run_quantize(full, {{"mode", "weight_only"}, {"block_size", "16"}, {"weight_zero_point", "true"}, {"scale_search", "false"}});
  test::run_quantize(searched, {{"mode", "weight_only"}, {"block_size", "16"}, {"scale_search", "true"}});
  CHECK(bytes_of(full, "W_scale") == bytes_of(m, "W_scale"));
  CHECK(bytes_of(full, "W_quantized") == bytes_of(m, "W_quantized"));
  CHECK(bytes_of(searched, "W_scale") != bytes_of(m, "W_scale"));
}

TEST_CASE("quantize: a recorded pipeline without weight_zero_point/scale_search means the old symmetric searched blocks") {
  transforms::PassRegistry r;
  r.add(transforms::quantize::make_pass);
  const auto fresh = transforms::Pipeline::parse("quantize{mode=weight_only}", r);
  const auto old = transforms::Pipeline::parse_recorded("quantize{mode=weight_only}", r);
  CHECK(fresh.stages().at(0).options.get_bool("weight_zero_point"));
  CHECK_FALSE(fresh.stages().at(0).options.get_bool("scale_search"));
  CHECK_FALSE(old.stages().at(0).options.get_bool("weight_zero_point"));
  CHECK(old.stages().at(0).options.get_bool("scale_search"));
  // Static and dynamic states recorded before the change spell the old defaults: still accepted.
  ir::Model m = test::weight_only_block();
  CHECK_NOTHROW(test::run_quantize(m, {{"mode", "dynamic"}, {"weight_zero_point", "false"}, {"scale_search", "true"}}));
}

TEST_CASE("quantize mode=weight_only: option checks") {
  ir::Model m = test::weight_only_block();
  CHECK_THROWS_AS(test::run_quantize(m, {{"mode", "weight_only"}, {"bits", "3"}}), UsageError);
  CHECK_THROWS_AS(test::run_quantize(m, {{"mode", "weight_only"}, {"block_size", "24"}}), UsageError);
  CHECK_THROWS_AS(test::run_quantize(m, {{"mode", "weight_only"}, {"block_size", "8"}}), UsageError);
  CHECK_THROWS_AS(test::run_quantize(m, {{"bits", "8"}}), UsageError);  // needs mode=weight_only
  CHECK_THROWS_AS(test::run_quantize(m, {{"mode", "weight_only"}, {"gptq_act_order", "true"}}), UsageError);  // needs gptq
  CHECK_THROWS_AS(test::run_quantize(m, {{"mode", "weight_only"}, {"method", "auto"}}), UsageError);
  CHECK_THROWS_AS(test::run_quantize(m, {{"mode", "weight_only"}, {"algorithm", "gptq"}}), UsageError);  // no calib
  CHECK(test::count_ops(m, "DequantizeLinear") == 0);
  CHECK(m.opset("") == 17);
}

TEST_CASE("quantize mode=weight_only: raising opset 17 to 21 moves a Reduce node's axes attribute to an input") {
  ir::Model m = test::weight_only_block();
  ir::Graph& g = *m.graph;
  // Y -> ReduceL2(axes=[-1], keepdims=1) -> N: the opset-17 form of an embedding normaliser.
  ir::Value* y = g.find_value("Y");
  g.outputs.erase(std::find(g.outputs.begin(), g.outputs.end(), y));
  auto& r = test::add_node(g, "ReduceL2", "norm", {y}, {"N"}, 17, {test::attr_ints("axes", {-1})});
  r.outputs[0]->dtype = ir::DType::F32;
  r.outputs[0]->shape = ir::Shape::of({1, 32, 1});
  test::mark_output(g, *r.outputs[0]);
  const ir::Model before = [&] {
    ir::Model c = test::weight_only_block();
    ir::Graph& cg = *c.graph;
    ir::Value* cy = cg.find_value("Y");
    cg.outputs.erase(std::find(cg.outputs.begin(), cg.outputs.end(), cy));
    test::mark_output(cg, *test::add_node(cg, "ReduceL2", "norm", {cy}, {"N"}, 17, {test::attr_ints("axes", {-1})}).outputs[0]);
    return c;
  }();
  test::run_quantize(m, {{"mode", "weight_only"}});
  CHECK(m.opset("") == 21);
  const ir::Node* norm = g.find_value("N")->producer;
  REQUIRE(norm != nullptr);
  CHECK_FALSE(norm->has_attr("axes"));
  REQUIRE(norm->inputs.size() == 2);
  REQUIRE(norm->inputs[1]->initializer);
  CHECK(norm->inputs[1]->initializer->data<int64_t>()[0] == -1);
  const auto got = test::run_cpu(m, feeds(6)), want = test::run_cpu(before, feeds(6));
  CHECK(got[0].dims() == want[0].dims());  // [1, 32, 1]: still reduced over the last axis only
}

TEST_CASE("block_quant: the range search never loses to the full range and uses int4's -8 code") {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  BlockFormat full, searched;
  full.block_size = searched.block_size = 32;
  searched.search = true;
  auto sse = [](const std::vector<float>& w, const BlockQuantized& q) {
    double e = 0;
    for (int64_t k = 0; k < q.K; ++k)
      for (int64_t n = 0; n < q.N; ++n) {
        const double d = w[static_cast<size_t>(k * q.N + n)] - dequantized(q, k, n, 32);
        e += d * d;
      }
    return e;
  };
  for (bool zp : {false, true}) {
    full.zero_point = searched.zero_point = zp;
    std::vector<float> w(64 * 16);
    for (float& v : w) v = nd(rng);
    const double e_full = sse(w, rtn_quantize(w.data(), 64, 16, full)), e_search = sse(w, rtn_quantize(w.data(), 64, 16, searched));
    MESSAGE(std::string(zp ? "uint4" : "int4") << ": squared error full range " << e_full << ", searched " << e_search);
    CHECK(e_search < (zp ? 0.99 : 0.9) * e_full);
  }
  // A block whose largest magnitude is negative: -8 * (8 / 8) represents it exactly.
  const float neg[] = {-8.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, -1.f, -2.f, -3.f, -4.f, -5.f, -6.f, -7.f, 0.f};
  BlockFormat f;
  f.block_size = 16;
  f.search = true;
  const BlockQuantized q = rtn_quantize(neg, 16, 1, f);
  CHECK(q.scale[0] == 1.f);
  CHECK(q.codes[0] == -8);
  for (int k = 0; k < 16; ++k) CHECK(dequantized(q, k, 0, 16) == neg[k]);
}

TEST_CASE("quantize mode=weight_only embeddings=true: the Gather table int8 per column next to int4 MatMul blocks") {
  for (const char* format : {"qdq", "matmul_nbits"}) {
    ir::Model m = test::empty_model(17);
    ir::Graph& g = *m.graph;
    ir::Value& ids = test::add_input(g, "ids", {1, 6}, ir::DType::I64);
    auto& emb = test::add_node(g, "Gather", "embed", {&test::add_random_init(g, "E", {50, 32}, 41), &ids}, {"t"}, 17);
    auto& mm = test::add_node(g, "MatMul", "proj", {emb.outputs[0], &test::add_random_init(g, "W", {32, 8}, 42)}, {"y"}, 17);
    test::mark_output(g, *mm.outputs[0]);
    const auto res = test::run_quantize(m, {{"mode", "weight_only"}, {"embeddings", "true"}, {"weight_format", format}});
    INFO(std::string(format));
    CHECK(res.stats["embedding_tables"] == 1);
    CHECK(res.stats["weight_bytes_float"] == 32 * 8 * 4);  // the MatMul weight only
    CHECK(m.opset("") == (std::string(format) == "qdq" ? 21 : 17));  // per-column DequantizeLinear: 13 suffices
    CHECK(g.find_value("E") == nullptr);
    const ir::Value* t = g.find_value("t");
    REQUIRE(t != nullptr);
    REQUIRE(t->producer != nullptr);
    CHECK(t->producer->op_type == "DequantizeLinear");
    CHECK(t->producer->attr_int("axis", -1) == 2);  // the last axis of the gathered [1, 6, 32]
    CHECK(t->producer->inputs[0]->producer->op_type == "Gather");
    CHECK(g.find_value("E_quantized")->initializer->dtype() == ir::DType::I8);
  }
  // The default in mode=weight_only; static mode leaves the table float.
  ir::Model m = test::empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& ids = test::add_input(g, "ids", {1, 6}, ir::DType::I64);
  auto& emb = test::add_node(g, "Gather", "embed", {&test::add_random_init(g, "E", {50, 32}, 41), &ids}, {"t"}, 17);
  test::mark_output(g, *test::add_node(g, "MatMul", "proj", {emb.outputs[0], &test::add_random_init(g, "W", {32, 8}, 42)},
                                       {"y"}, 17).outputs[0]);
  CHECK(test::run_quantize(m, {{"mode", "weight_only"}}).stats["embedding_tables"] == 1);
}
