// com.microsoft MatMulNBits on the cpu backend: one-node models with seeded block-quantized
// weights (codes, scales and zero points drawn here, packed as ONNX Runtime's op spec says) run
// by mcc and compared with ONNX Runtime on the same file, and always with a float product against
// weights dequantized here from the codes (so the cases still check the numbers where ONNX
// Runtime is missing, and say so). Also: weights fed as graph inputs (dequantized per run),
// shape inference and placement of the op, `mcc eval` / `mcc inspect` on such a model, and
// hostile inputs refused with a ModelError naming the node.
// Not covered against ONNX Runtime (checked against the dequantized product only): 8-bit weights
// with float zero points (its cpu kernel refuses them) and g_idx with packed uint8 zero points
// (its act-order path ignores the zero points).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends/backend_registry.h"
#include "backends/placement.h"
#include "ir/element_types.h"
#include "ir/float16.h"
#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "ir/shape_inference/shape_inference.h"
#include "support/graph_builder.h"
#include "support/ort.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using namespace mcc;
using ir::DType;

namespace {

enum class Zp { None, Packed, Float };

/// One MatMulNBits problem. Weights are initializers unless `dynamic` (then graph inputs fed
/// with the same values).
struct Spec {
  int64_t K = 64, N = 8, bits = 4, block_size = 32;
  Zp zp = Zp::None;
  bool bias = false;
  bool trivial_gidx = false;  // g_idx input holding k / block_size
  bool two_d = false;         // scales and zero points written [N, *] instead of flat
  bool dynamic = false;
  std::vector<int64_t> a_dims{3, 64};
  uint32_t seed = 1;
  DType dt = DType::F32;
};

using Feeds = std::vector<std::pair<std::string, backends::RValue>>;

struct Built {
  ir::Model model;
  Feeds feeds;            // A, and the weights when dynamic
  std::vector<double> a;  // A's values as stored
  std::vector<double> w;  // [N, K] dequantized here: (code - zp) * scale
  std::vector<double> bias;
};

/// A float tensor of dtype dt (f32 or f16) from float values; `stored` gets the values as stored.
ir::Tensor float_tensor(DType dt, std::vector<int64_t> dims, const std::vector<float>& v,
                        std::vector<double>* stored = nullptr) {
  if (stored) stored->clear();
  if (dt == DType::F16) {
    std::vector<mcc::f16> h;
    for (float x : v) {
      h.push_back(static_cast<mcc::f16>(x));
      if (stored) stored->push_back(static_cast<float>(h.back()));
    }
    return ir::Tensor::from_vector<mcc::f16>(std::move(dims), h);
  }
  if (stored) stored->assign(v.begin(), v.end());
  return ir::Tensor::from_vector<float>(std::move(dims), v);
}

ir::Attribute int_attr(const std::string& name, int64_t v) { return test::attr_i(name, v); }

/// The model Y = MatMulNBits(A, B, scales, zero_points?, g_idx?, bias?) named 'nbits'.
Built build(const Spec& s) {
  std::mt19937 rng(s.seed);
  const int64_t K = s.K, N = s.N, bits = s.bits, bs = s.block_size;
  const int64_t kb = (K + bs - 1) / bs, blob = bs * bits / 8, zb = (kb * bits + 7) / 8;
  const int levels = 1 << bits;
  std::uniform_int_distribution<int> code_d(0, levels - 1);
  std::uniform_real_distribution<float> scale_d(0.01f, 0.05f), unit(0.f, 1.f);

  // Codes for every slot of B, the padding past K included (it must be ignored).
  std::vector<uint8_t> b(static_cast<size_t>(N * kb * blob), 0);
  std::vector<int> codes(static_cast<size_t>(N * kb * bs));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < kb * bs; ++k) {
      const int c = code_d(rng);
      codes[static_cast<size_t>(n * kb * bs + k)] = c;
      const int64_t bit = (k % bs) * bits;
      b[static_cast<size_t>(n * kb * blob + (k / bs) * blob + bit / 8)] |=
          static_cast<uint8_t>(c << (bit % 8));
    }
  std::vector<float> scales(static_cast<size_t>(N * kb));
  for (auto& x : scales) x = scale_d(rng);
  std::vector<double> zp(static_cast<size_t>(N * kb), static_cast<double>(levels / 2));
  std::vector<uint8_t> zp_packed(static_cast<size_t>(N * zb), 0);
  std::vector<float> zp_float(static_cast<size_t>(N * kb));
  if (s.zp == Zp::Packed) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < kb; ++j) {
        const int z = code_d(rng);
        zp[static_cast<size_t>(n * kb + j)] = z;
        const int64_t bit = j * bits;
        zp_packed[static_cast<size_t>(n * zb + bit / 8)] |= static_cast<uint8_t>(z << (bit % 8));
      }
  } else if (s.zp == Zp::Float) {
    for (auto& z : zp_float) z = unit(rng) * static_cast<float>(levels - 1);
  }

  Built out;
  out.model = test::empty_model(17);
  out.model.opset_imports.push_back({"com.microsoft", 1});
  ir::Graph& g = *out.model.graph;
  ir::Value& a = test::add_input(g, "A", s.a_dims, s.dt);
  std::vector<float> av(static_cast<size_t>(ir::checked_numel(s.a_dims)));
  for (auto& x : av) x = unit(rng) * 2.f - 1.f;
  out.feeds.emplace_back("A", backends::RValue::of(float_tensor(s.dt, s.a_dims, av, &out.a)));

  auto weight = [&](const std::string& name, ir::Tensor t) -> ir::Value* {
    if (!s.dynamic) return &g.add_initializer(name, std::move(t));
    ir::Value& v = test::add_input(g, name, t.dims(), t.dtype());
    out.feeds.emplace_back(name, backends::RValue::of(std::move(t)));
    return &v;
  };
  std::vector<ir::Value*> ins{&a, weight("B", ir::Tensor::from_vector<uint8_t>({N, kb, blob}, b))};
  const std::vector<int64_t> per_block =
      s.two_d ? std::vector<int64_t>{N, kb} : std::vector<int64_t>{N * kb};
  std::vector<double> scales_stored, zp_stored;
  ins.push_back(weight("scales", float_tensor(s.dt, per_block, scales, &scales_stored)));
  if (s.zp == Zp::Packed) {
    const std::vector<int64_t> d =
        s.two_d ? std::vector<int64_t>{N, zb} : std::vector<int64_t>{N * zb};
    ins.push_back(weight("zero_points", ir::Tensor::from_vector<uint8_t>(d, zp_packed)));
  } else if (s.zp == Zp::Float) {
    ins.push_back(weight("zero_points", float_tensor(s.dt, per_block, zp_float, &zp_stored)));
    zp = zp_stored;
  } else if (s.trivial_gidx || s.bias) {
    ins.push_back(nullptr);
  }
  if (s.trivial_gidx) {
    std::vector<int32_t> gi(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) gi[static_cast<size_t>(k)] = static_cast<int32_t>(k / bs);
    ins.push_back(weight("g_idx", ir::Tensor::from_vector<int32_t>({K}, gi)));
  } else if (s.bias) {
    ins.push_back(nullptr);
  }
  if (s.bias) {
    std::vector<float> bv(static_cast<size_t>(N));
    for (auto& x : bv) x = unit(rng) * 2.f - 1.f;
    ins.push_back(weight("bias", float_tensor(s.dt, {N}, bv, &out.bias)));
  }
  ir::Node& node = g.add_node("MatMulNBits", "com.microsoft", "nbits", ins, {"Y"});
  node.since_version = 1;
  node.attrs = {int_attr("K", K), int_attr("N", N), int_attr("bits", bits),
                int_attr("block_size", bs), int_attr("accuracy_level", 0)};
  test::mark_output(g, *node.outputs[0], s.dt);

  out.w.resize(static_cast<size_t>(N * K));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const size_t blk = static_cast<size_t>(n * kb + k / bs);
      out.w[static_cast<size_t>(n * K + k)] =
          (codes[static_cast<size_t>(n * kb * bs + k)] - zp[blk]) * scales_stored[blk];
    }
  return out;
}

/// A x W^T (+ bias) in double, and per element the sum of |a * w| (the scale of rounding error).
struct Reference {
  std::vector<double> y, magnitude;
};
Reference reference(const Spec& s, const Built& b) {
  const int64_t K = s.K, N = s.N, M = static_cast<int64_t>(b.a.size()) / K;
  Reference r;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = b.bias.empty() ? 0.0 : b.bias[static_cast<size_t>(n)], mag = std::fabs(acc);
      for (int64_t k = 0; k < K; ++k) {
        const double p = b.a[static_cast<size_t>(m * K + k)] * b.w[static_cast<size_t>(n * K + k)];
        acc += p;
        mag += std::fabs(p);
      }
      r.y.push_back(acc);
      r.magnitude.push_back(mag);
    }
  return r;
}

std::vector<double> values(const ir::Tensor& t) {
  std::vector<double> v;
  if (t.dtype() == DType::F16)
    for (mcc::f16 x : t.data<mcc::f16>()) v.push_back(static_cast<float>(x));
  else
    for (float x : t.data<float>()) v.push_back(x);
  return v;
}

/// Largest |got - want| relative to the allowed error rtol * |want| + eps * magnitude: <= 1 when
/// every element is within tolerance (inf on a size mismatch). f32: 1e-5 and 1e-6 (accumulation
/// order); f16: 1e-3 and 1e-3 (rounding of stored weights and outputs).
double excess(const std::vector<double>& got, const std::vector<double>& want,
              const std::vector<double>& magnitude, DType dt) {
  if (got.size() != want.size()) return INFINITY;
  const double rtol = dt == DType::F16 ? 1e-3 : 1e-5, eps = dt == DType::F16 ? 1e-3 : 1e-6;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want[i]) /
                                (rtol * std::fabs(want[i]) + eps * magnitude[i] + 1e-12));
  return worst;
}

double max_abs(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

std::vector<ir::Tensor> run_mcc_cpu(const ir::Model& m, const Feeds& feeds, int threads, bool keep_weight_copies = true) {
  backends::ExecOptions o{threads};
  o.keep_weight_copies = keep_weight_copies;
  backends::Executor ex(m, o);
  std::vector<ir::Tensor> out;
  for (auto& v : ex.run(feeds)) out.push_back(v.tensor);
  return out;
}

/// ONNX Runtime's output 0 for A of `b` on the saved model `path`; nullopt when its run fails.
std::optional<ir::Tensor> ort_output(const std::string& path, const Built& b, const fs::path& dir) {
  const fs::path sample = dir / "s0";
  fs::create_directories(sample);
  ir::save_npy(b.feeds.at(0).second.tensor, (sample / "A.npy").string());
  if (!test::write_ort_outputs(path, dir.string())) return std::nullopt;
  return ir::load_npy((sample / "output_0.npy").string());
}

/// Runs one case: mcc (loaded back from the saved file, 1 and 3 threads) against the dequantized
/// product, and against ONNX Runtime on the same file when it is installed.
void check_case(const Spec& s, bool ort_runs_it = true) {
  const Built b = build(s);
  const Reference ref = reference(s, b);
  test::TempDir tmp("mcc-nbits");
  const std::string path = (tmp.path / "nbits.onnx").string();
  ir::save_model(b.model, path);
  const ir::Model loaded = ir::load_model(path);

  std::vector<int64_t> want_dims = s.a_dims;
  want_dims.back() = s.N;
  const auto y1 = run_mcc_cpu(loaded, b.feeds, 1);
  REQUIRE(y1.size() == 1);
  CHECK(y1[0].dtype() == s.dt);
  CHECK(y1[0].dims() == want_dims);
  const std::vector<double> got = values(y1[0]);
  const double e_ref = excess(got, ref.y, ref.magnitude, s.dt);
  INFO("mcc vs dequantized product: max |diff| " << max_abs(got, ref.y) << " (excess " << e_ref
                                                 << ")");
  CHECK(e_ref <= 1.0);
  // Threads split rows and columns of one GEMM: the same values.
  const auto y3 = run_mcc_cpu(loaded, b.feeds, 3);
  CHECK(excess(values(y3[0]), got, ref.magnitude, s.dt) <= 1.0);

  if (!ort_runs_it) return;
  const bool have_ort = test::have_onnxruntime();
  WARN_MESSAGE(have_ort, "MatMulNBits not compared with ONNX Runtime: " << test::kOrtMissing);
  if (!have_ort) return;
  const auto ort = ort_output(path, b, tmp.path / "golden");
  REQUIRE_MESSAGE(ort.has_value(), "ONNX Runtime failed on " << path);
  CHECK(ort->dims() == want_dims);
  const double e_ort = excess(got, values(*ort), ref.magnitude, s.dt);
  INFO("mcc vs ONNX Runtime: max |diff| " << max_abs(got, values(*ort)) << " (excess " << e_ort
                                          << ")");
  CHECK(e_ort <= 1.0);
}

/// The ModelError text of loading and running a model ('' when it runs).
std::string error_of(const Built& b) {
  try {
    run_mcc_cpu(b.model, b.feeds, 1);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

ir::Node& nbits_node(ir::Model& m) {
  for (ir::Node* n : m.graph->nodes())
    if (n->op_type == "MatMulNBits") return *n;
  throw InternalError("no MatMulNBits node");
}

}  // namespace

TEST_CASE("MatMulNBits 4-bit, no zero points (8 implied), matches ONNX Runtime") {
  check_case({.K = 64, .N = 8, .a_dims = {3, 64}, .seed = 1});
}

TEST_CASE("MatMulNBits 4-bit with packed uint8 zero points, K not a multiple of the block") {
  // K = 70: the last block holds 6 of 32 codes, the rest is padding (random codes, ignored);
  // 3 blocks per row: the zero points of one row take 2 bytes, the high nibble of the second
  // unused.
  check_case({.K = 70, .N = 12, .zp = Zp::Packed, .a_dims = {5, 70}, .seed = 2});
}

TEST_CASE("MatMulNBits 4-bit with float zero points and bias") {
  check_case({.K = 96, .N = 10, .zp = Zp::Float, .bias = true, .a_dims = {4, 96}, .seed = 3});
}

TEST_CASE("MatMulNBits bias without zero points, 2-D scales and zero points") {
  check_case({.K = 48, .N = 6, .bias = true, .a_dims = {2, 48}, .seed = 4});
  check_case({.K = 80,
              .N = 7,
              .block_size = 16,
              .zp = Zp::Packed,
              .two_d = true,
              .a_dims = {3, 80},
              .seed = 5});
}

TEST_CASE("MatMulNBits A of rank 3 and rank 1") {
  check_case({.K = 70, .N = 9, .zp = Zp::Packed, .bias = true, .a_dims = {2, 3, 70}, .seed = 6});
  check_case({.K = 40, .N = 5, .block_size = 16, .a_dims = {40}, .seed = 7});
}

TEST_CASE("MatMulNBits block sizes 16, 32 and 128") {
  for (int64_t bs : {16, 32, 128}) {
    CAPTURE(bs);
    check_case({.K = 300,
                .N = 16,
                .block_size = bs,
                .zp = Zp::Packed,
                .a_dims = {4, 300},
                .seed = static_cast<uint32_t>(10 + bs)});
  }
}

TEST_CASE("MatMulNBits 8-bit, with and without zero points (128 implied)") {
  check_case({.K = 70, .N = 8, .bits = 8, .zp = Zp::Packed, .a_dims = {3, 70}, .seed = 20});
  check_case(
      {.K = 64, .N = 8, .bits = 8, .block_size = 16, .bias = true, .a_dims = {3, 64}, .seed = 21});
  // ONNX Runtime's cpu kernel refuses 8-bit weights with float zero points: dequantized product
  // only.
  check_case({.K = 64, .N = 8, .bits = 8, .zp = Zp::Float, .a_dims = {3, 64}, .seed = 22}, false);
}

TEST_CASE("MatMulNBits 2-bit, with and without zero points") {
  check_case({.K = 70, .N = 8, .bits = 2, .zp = Zp::Packed, .a_dims = {3, 70}, .seed = 30});
  check_case({.K = 64, .N = 8, .bits = 2, .a_dims = {3, 64}, .seed = 31});
}

TEST_CASE("MatMulNBits with the trivial g_idx order") {
  // The same product as without g_idx. ONNX Runtime 1.32's cpu kernel agrees without zero points
  // and with float ones; with g_idx and packed uint8 zero points it uses 8 for every block (its
  // act-order path drops them), so that combination is checked against the dequantized product
  // only.
  check_case({.K = 70, .N = 8, .bias = true, .trivial_gidx = true, .a_dims = {3, 70}, .seed = 40});
  check_case(
      {.K = 70, .N = 8, .zp = Zp::Float, .trivial_gidx = true, .a_dims = {3, 70}, .seed = 41});
  check_case(
      {.K = 70, .N = 8, .zp = Zp::Packed, .trivial_gidx = true, .a_dims = {3, 70}, .seed = 42},
      false);
}

TEST_CASE("MatMulNBits float16 A, scales and zero points") {
  check_case({.K = 70,
              .N = 8,
              .zp = Zp::Packed,
              .bias = true,
              .a_dims = {3, 70},
              .seed = 50,
              .dt = DType::F16});
  check_case({.K = 64, .N = 8, .zp = Zp::Float, .a_dims = {3, 64}, .seed = 51, .dt = DType::F16});
}

TEST_CASE("MatMulNBits with weights fed as graph inputs (dequantized on every run)") {
  for (const Zp zp : {Zp::None, Zp::Packed, Zp::Float}) {
    const Spec s{
        .K = 70, .N = 8, .zp = zp, .bias = true, .dynamic = true, .a_dims = {3, 70}, .seed = 60};
    const Built b = build(s);
    const Reference ref = reference(s, b);
    backends::Executor ex(b.model, backends::ExecOptions{2});
    const auto first = ex.run(b.feeds);
    CHECK(excess(values(first.at(0).tensor), ref.y, ref.magnitude, s.dt) <= 1.0);
    // Other weights on a second run of the same executor give the other product.
    const Built b2 = build(
        {.K = 70, .N = 8, .zp = zp, .bias = true, .dynamic = true, .a_dims = {3, 70}, .seed = 61});
    const Reference ref2 = reference(s, b2);
    CHECK(excess(values(ex.run(b2.feeds).at(0).tensor), ref2.y, ref2.magnitude, s.dt) <= 1.0);
  }
}

TEST_CASE("MatMulNBits: shape inference, element types and placement of what follows") {
  Built b = build({.K = 64, .N = 8, .a_dims = {2, 3, 64}, .seed = 70});
  ir::Graph& g = *b.model.graph;
  ir::Value* y = nbits_node(b.model).outputs[0];
  // The declared output is dropped: its type and shape come from inference.
  g.outputs.clear();
  y->has_type = false;
  y->dtype = DType::Undefined;
  ir::Node& relu = test::add_node(g, "Relu", "relu", {y}, {"Z"}, 17);
  test::mark_output(g, *relu.outputs[0]);
  const ir::ShapeInference si(b.model);
  CHECK(si.of(y).dtype == DType::F32);
  REQUIRE(si.of(y).dims.has_value());
  CHECK(*si.of(y).dims == std::vector<int64_t>{2, 3, 8});
  CHECK(ir::ElementTypes(b.model).of(y) == DType::F32);
  // A's last dim other than K: unknown dims (the kernel reports it), the element type still known.
  g.inputs[0]->shape = ir::Shape::of({3, 65});
  CHECK_FALSE(ir::ShapeInference(b.model).of(y).dims.has_value());
  CHECK(ir::ShapeInference(b.model).of(y).dtype == DType::F32);
  g.inputs[0]->shape = ir::Shape::of({2, 3, 64});

  // Every other backend leaves MatMulNBits on the cpu and still takes the Relu (known f32 input).
  for (const backends::Backend* be : backends::all_backends()) {
    if (be == &backends::cpu_backend()) continue;
    CAPTURE(be->name());
    const auto places = backends::place_graph(g, *be, ir::ElementTypes(b.model));
    REQUIRE(places.size() == 2);
    CHECK(places[0].backend == &backends::cpu_backend());
    CHECK(places[1].backend == be);
  }
}

TEST_CASE("mcc eval and mcc inspect on a MatMulNBits model (default backend)") {
  const Spec s{.K = 70, .N = 8, .zp = Zp::Packed, .bias = true, .a_dims = {3, 70}, .seed = 80};
  const Built b = build(s);
  test::TempDir tmp("mcc-nbits-cli");
  const std::string path = (tmp.path / "nbits.onnx").string();
  ir::save_model(b.model, path);
  const auto ins = test::run_mcc({"inspect", path});
  INFO(ins.out << ins.err);
  CHECK(ins.code == 0);
  CHECK(ins.out.find("MatMulNBits") != std::string::npos);

  // Golden outputs from the dequantized product, written as mcc eval reads them.
  const fs::path sample = tmp.path / "golden" / "s0";
  fs::create_directories(sample);
  ir::save_npy(b.feeds[0].second.tensor, (sample / "A.npy").string());
  const Reference ref = reference(s, b);
  std::vector<float> yv(ref.y.begin(), ref.y.end());
  ir::save_npy(ir::Tensor::from_vector<float>({3, 8}, yv), (sample / "output_0.npy").string());
  const auto ev = test::run_mcc({"eval", path, "--golden", (tmp.path / "golden").string()});
  INFO(ev.out << ev.err);
  CHECK(ev.code == 0);
}

TEST_CASE("MatMulNBits refuses hostile inputs with a ModelError naming the node") {
  const Spec base{.K = 70, .N = 8, .zp = Zp::Packed, .a_dims = {3, 70}, .seed = 90};
  auto expect = [](const Built& b, const std::string& what) {
    const std::string e = error_of(b);
    INFO(e);
    CHECK(e.find("'nbits'") != std::string::npos);
    CHECK(e.find(what) != std::string::npos);
  };
  SUBCASE("B of the wrong size") {
    Built b = build(base);
    ir::Value* bv = nbits_node(b.model).inputs[1];
    bv->initializer =
        ir::Tensor::from_vector<uint8_t>({8, 3, 15}, std::vector<uint8_t>(8 * 3 * 15));
    expect(b, "B must be [N, k_blocks, blob_size] = [8,3,16]");
  }
  SUBCASE("K attribute other than A's last dim") {
    Built b = build(base);
    b.model.graph->inputs[0]->shape = ir::Shape::of({3, 69});
    b.feeds[0].second = backends::RValue::of(ir::Tensor::allocate(DType::F32, {3, 69}));
    expect(b, "A must end in K=70");
  }
  SUBCASE("K attribute that does not fit B") {
    Built b = build(base);
    nbits_node(b.model).set_attr(int_attr("K", 200));
    b.model.graph->inputs[0]->shape = ir::Shape::of({3, 200});
    b.feeds[0].second = backends::RValue::of(ir::Tensor::allocate(DType::F32, {3, 200}));
    expect(b, "B must be [N, k_blocks, blob_size]");
  }
  SUBCASE("N attribute that does not fit B") {
    Built b = build(base);
    nbits_node(b.model).set_attr(int_attr("N", 9));
    expect(b, "got [8,3,16]");
  }
  SUBCASE("block_size not a power of two") {
    Built b = build(base);
    nbits_node(b.model).set_attr(int_attr("block_size", 24));
    expect(b, "block_size must be a power of 2");
  }
  SUBCASE("block_size below 16") {
    Built b = build(base);
    nbits_node(b.model).set_attr(int_attr("block_size", 8));
    expect(b, "block_size must be a power of 2");
  }
  SUBCASE("unsupported bits") {
    Built b = build(base);
    nbits_node(b.model).set_attr(int_attr("bits", 3));
    expect(b, "bits must be 2, 4 or 8, got 3");
  }
  SUBCASE("missing N and absurd K") {
    Built b = build(base);
    auto& attrs = nbits_node(b.model).attrs;
    attrs.erase(std::remove_if(attrs.begin(), attrs.end(),
                               [](const ir::Attribute& a) { return a.name == "N"; }),
                attrs.end());
    expect(b, "needs attribute N");
    Built c = build(base);
    nbits_node(c.model).set_attr(int_attr("K", int64_t{1} << 62));
    expect(c, "K and N must be in [1, 2^40]");
  }
  SUBCASE("scales of the wrong shape or dtype") {
    Built b = build(base);
    nbits_node(b.model).inputs[2]->initializer = ir::Tensor::allocate(DType::F32, {8, 2});
    expect(b, "scales must be [24] or [8,3]");
    Built c = build(base);
    nbits_node(c.model).inputs[2]->initializer = ir::Tensor::allocate(DType::F64, {24});
    expect(c, "scales must have A's dtype");
  }
  SUBCASE("zero points of the wrong shape or dtype") {
    Built b = build(base);
    nbits_node(b.model).inputs[3]->initializer = ir::Tensor::allocate(DType::U8, {8 * 3});
    expect(b, "packed uint8 zero_points must be [16] or [8,2]");
    Built c = build(base);
    nbits_node(c.model).inputs[3]->initializer = ir::Tensor::allocate(DType::I32, {16});
    expect(c, "zero_points must be uint8 or A's dtype");
  }
  SUBCASE("g_idx other than the trivial order (act-order)") {
    Built b = build({.K = 70, .N = 8, .trivial_gidx = true, .a_dims = {3, 70}, .seed = 91});
    ir::Value* gv = nbits_node(b.model).inputs[4];
    std::vector<int32_t> gi(gv->initializer->data<int32_t>().begin(),
                            gv->initializer->data<int32_t>().end());
    std::swap(gi[0], gi[69]);
    gv->initializer = ir::Tensor::from_vector<int32_t>({70}, gi);
    expect(b, "g_idx other than k / block_size (act-order) is not supported");
  }
  SUBCASE("bias of the wrong length") {
    Built b = build({.K = 70, .N = 8, .bias = true, .a_dims = {3, 70}, .seed = 92});
    nbits_node(b.model).inputs[5]->initializer = ir::Tensor::allocate(DType::F32, {7});
    expect(b, "bias must be f32 [8], got f32 [7]");
  }
}

TEST_CASE("MatMulNBits without kept weight copies: dequantized a band of outputs at a time, the same product") {
  // N spans two bands of 4096 outputs; bias and zero points index across the band boundary.
  const Spec s{.K = 48, .N = 4096 + 72, .zp = Zp::Packed, .bias = true, .a_dims = {5, 48}, .seed = 123};
  const Built b = build(s);
  const Reference ref = reference(s, b);
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    const auto kept = run_mcc_cpu(b.model, b.feeds, threads, true);
    const auto banded = run_mcc_cpu(b.model, b.feeds, threads, false);
    REQUIRE(banded.size() == 1);
    CHECK(banded[0].dims() == kept[0].dims());
    const std::vector<double> got = values(banded[0]);
    INFO("banded vs dequantized product: max |diff| " << max_abs(got, ref.y));
    CHECK(excess(got, ref.y, ref.magnitude, s.dt) <= 1.0);
    CHECK(excess(got, values(kept[0]), ref.magnitude, s.dt) <= 1.0);
  }
}
