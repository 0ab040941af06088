// The cuda backend's runtime and framework: the caching allocator, transfers and device tags,
// blas::gemm against a naive product, the OpTable's lookups and common checks, and the executor
// placing a graph across the cuda backend and the cpu. In mcc_tests the backend is the emulated
// one; mcc_gpu_tests runs the same cases on a real device.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/backend_registry.h"
#include "backends/cuda/op_table.h"
#include "backends/cuda/runtime/blas.h"
#include "backends/cuda/runtime/device_allocator.h"
#include "backends/cuda/runtime/device_api.h"
#include "backends/executor.h"
#include "ir/errors.h"
#include "ir/float16.h"
#include "support/graph_builder.h"

namespace mcc {
namespace {

using ir::DType;
using ir::Tensor;

const backends::Backend& cuda_be() { return backends::find_backend("cuda"); }

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

Tensor host_f16(std::vector<int64_t> dims, const std::vector<float>& v) {
  std::vector<f16> h(v.begin(), v.end());
  return Tensor::from_vector<f16>(std::move(dims), h);
}

std::vector<float> to_floats(const Tensor& host) {
  if (host.dtype() == DType::F16) {
    std::vector<float> out;
    for (f16 h : host.data<f16>()) out.push_back(static_cast<float>(h));
    return out;
  }
  auto d = host.data<float>();
  return {d.begin(), d.end()};
}

}  // namespace

TEST_SUITE("cuda-emulated") {

TEST_CASE("cuda backend: found by name, available, on cuda:0") {
  const backends::Backend& b = cuda_be();
  CHECK(b.name() == "cuda");
  CHECK(b.unavailable_reason() == "");
  CHECK(b.device() == ir::Device{ir::DeviceType::Cuda, 0});
  CHECK(cuda::device_count() >= 1);
  if (cuda::emulated()) CHECK(cuda::device_description() == "emulated on the host");
  else CHECK(cuda::device_description().find("sm_") != std::string::npos);
  bool listed = false;
  for (const backends::Backend* a : backends::available_backends()) listed = listed || a == &b;
  CHECK(listed);
}

TEST_CASE("cuda allocator: freed blocks are cached by size class and reused") {
  cuda::release_cached_device_memory();
  CHECK(cuda::cached_device_bytes() == 0);
  const size_t used0 = cuda::used_device_bytes();

  auto a = cuda::allocate_device_buffer(1000);
  CHECK(a->size() == 1000);
  CHECK(a->device() == ir::Device{ir::DeviceType::Cuda, 0});
  CHECK(a->writable());
  CHECK(a->data() == a->mutable_data());
  CHECK(cuda::used_device_bytes() == used0 + 1024);  // 512-byte steps up to 4 KiB
  const std::byte* first = a->data();
  a.reset();
  CHECK(cuda::used_device_bytes() == used0);
  CHECK(cuda::cached_device_bytes() == 1024);

  SUBCASE("a request of the same class gets the cached block") {
    auto b = cuda::allocate_device_buffer(600);
    CHECK(b->data() == first);
    CHECK(cuda::cached_device_bytes() == 0);
    CHECK(cuda::used_device_bytes() == used0 + 1024);
  }
  SUBCASE("another class does not") {
    auto c = cuda::allocate_device_buffer(2000);
    CHECK(c->data() != first);
    CHECK(cuda::used_device_bytes() == used0 + 2048);
    CHECK(cuda::cached_device_bytes() == 1024);
  }
  SUBCASE("large requests round to a quarter of their power of two") {
    auto d = cuda::allocate_device_buffer(5000);  // 4096 + 1024
    CHECK(cuda::used_device_bytes() == used0 + 5120);
    const std::byte* p = d->data();
    d.reset();
    auto e = cuda::allocate_device_buffer(5100);
    CHECK(e->data() == p);
    auto z = cuda::allocate_device_buffer(0);
    CHECK(z->size() == 0);
  }
  cuda::release_cached_device_memory();
  CHECK(cuda::cached_device_bytes() == 0);
  CHECK(cuda::used_device_bytes() == used0);
}

TEST_CASE("cuda backend: large downloads land in cached page-locked host blocks, small ones in plain memory") {
  const backends::Backend& b = cuda_be();
  cuda::release_cached_device_memory();
  const size_t pinned0 = cuda::used_pinned_bytes();
  std::vector<float> big(100000), small(1000);  // 400 KB (above the 256 KiB floor) and 4 KB
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 977) * 0.5f - 3.f;
  for (size_t i = 0; i < small.size(); ++i) small[i] = static_cast<float>(i) - 500.f;
  const Tensor dbig = b.upload(Tensor::from_vector<float>({100, 1000}, big));
  const Tensor dsmall = b.upload(Tensor::from_vector<float>({1000}, small));
  const std::byte* first = nullptr;
  for (int run = 0; run < 2; ++run) {
    CAPTURE(run);
    const Tensor hb = b.download(dbig), hs = b.download(dsmall);
    CHECK(hb.device().is_host());
    CHECK(hb.dims() == std::vector<int64_t>{100, 1000});
    REQUIRE(hb.nbytes() == big.size() * sizeof(float));
    CHECK(std::memcmp(hb.raw(), big.data(), hb.nbytes()) == 0);
    CHECK(std::memcmp(hs.raw(), small.data(), hs.nbytes()) == 0);
    CHECK(cuda::used_pinned_bytes() == pinned0 + 458752);  // only the large one, in its size class (1.75 x 256 KiB)
    if (run == 0) first = static_cast<const std::byte*>(hb.raw());
    else CHECK(static_cast<const std::byte*>(hb.raw()) == first);  // the freed block again
  }
  CHECK(cuda::used_pinned_bytes() == pinned0);
  cuda::release_cached_device_memory();
}

TEST_CASE("cuda backend: upload and download keep values, dtype and dims; device tags") {
  const backends::Backend& b = cuda_be();
  const std::vector<Tensor> hosts = {
      Tensor::from_vector<float>({2, 3}, {1.5f, -2.f, 0.f, 3.25f, -0.f, 7.f}),
      host_f16({5}, {0.1f, -65504.f, 6e-8f, 1.f, -2.5f}),
      Tensor::from_vector<int64_t>({3}, {-1, std::numeric_limits<int64_t>::max(), 0}),
      Tensor::from_vector<int8_t>({}, {-7}),
      Tensor::from_vector<float>({0, 4}, {}),
  };
  for (const Tensor& h : hosts) {
    CAPTURE(ir::dtype_name(h.dtype()));
    const Tensor d = b.upload(h);
    CHECK(d.device() == ir::Device{ir::DeviceType::Cuda, 0});
    CHECK(d.dtype() == h.dtype());
    CHECK(d.dims() == h.dims());
    CHECK(d.nbytes() == h.nbytes());
    if (h.nbytes() > 0) CHECK_THROWS_AS((void)d.raw(), InternalError);
    const Tensor back = b.download(d);
    CHECK(back.device().is_host());
    CHECK(back.dims() == h.dims());
    REQUIRE(back.nbytes() == h.nbytes());
    CHECK(std::memcmp(back.raw(), h.raw(), h.nbytes()) == 0);
  }
  SUBCASE("a host kernel reading a device tensor fails loudly") {
    const Tensor d = b.upload(hosts[0]);
    CHECK_THROWS_AS((void)d.data<float>(), InternalError);
  }
  SUBCASE("downloading a host tensor returns it") {
    CHECK(b.download(hosts[0]).raw() == hosts[0].raw());
  }
  SUBCASE("string tensors are not uploaded") {
    CHECK_THROWS_AS((void)b.upload(Tensor::from_strings({1}, {"x"})), UnsupportedError);
  }
  SUBCASE("allocate returns device memory") {
    auto buf = b.allocate(64);
    CHECK(buf->device() == ir::Device{ir::DeviceType::Cuda, 0});
    b.synchronize();
  }
}

namespace {

/// One gemm case: op(A) m x k, op(B) k x n, with padded row strides and batch strides.
struct GemmCase {
  bool ta = false, tb = false;
  int64_t m = 5, n = 7, k = 3, batch = 3;
  int64_t pad = 2;           // extra elements per stored row
  bool repeat_b = false;     // stride_b = 0
  float alpha = 1.f, beta = 0.f;
  bool f16 = false;
};

/// Runs the case on the backend and checks C against a double-precision loop.
void check_gemm(const GemmCase& g) {
  const backends::Backend& b = cuda_be();
  const int64_t a_rows = g.ta ? g.k : g.m, a_cols = g.ta ? g.m : g.k;
  const int64_t b_rows = g.tb ? g.n : g.k, b_cols = g.tb ? g.k : g.n;
  const int64_t lda = a_cols + g.pad, ldb = b_cols + g.pad, ldc = g.n + g.pad;
  const int64_t sa = a_rows * lda, sb = g.repeat_b ? 0 : b_rows * ldb, sc = g.m * ldc;
  const auto av = random_values(static_cast<size_t>(sa * g.batch), 1);
  const auto bv = random_values(static_cast<size_t>(std::max<int64_t>(sb, b_rows * ldb) * g.batch), 2);
  auto cv = random_values(static_cast<size_t>(sc * g.batch), 3);
  if (g.beta == 0.f)
    for (float& x : cv) x = std::numeric_limits<float>::quiet_NaN();  // must not be read
  auto make = [&](const std::vector<float>& v) {
    return g.f16 ? host_f16({static_cast<int64_t>(v.size())}, v)
                 : Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
  };
  // Reference from the values as stored (fp16-rounded when f16).
  const auto ar = to_floats(make(av)), br = to_floats(make(bv)), cr = to_floats(make(cv));
  const Tensor da = b.upload(make(av)), db = b.upload(make(bv));
  Tensor dc = b.upload(make(cv));
  cuda::gemm(g.f16 ? cuda::GemmType::F16 : cuda::GemmType::F32, g.ta, g.tb, g.m, g.n, g.k, g.alpha,
             da.device_data(), lda, sa, db.device_data(), ldb, sb, g.beta, dc.mutable_device_data(), ldc, sc,
             g.batch);
  const auto out = to_floats(b.download(dc));
  const double tol = g.f16 ? 1e-2 : 1e-5;
  for (int64_t t = 0; t < g.batch; ++t)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          const double x = ar[t * sa + (g.ta ? p * lda + i : i * lda + p)];
          const double y = br[t * sb + (g.tb ? j * ldb + p : p * ldb + j)];
          s += x * y;
        }
        const int64_t at = t * sc + i * ldc + j;
        const double want = g.alpha * s + (g.beta == 0.f ? 0.0 : g.beta * cr[at]);
        if (std::abs(out[at] - want) > tol * (1 + std::abs(want))) {
          FAIL_CHECK("C[" << t << "][" << i << "][" << j << "] = " << out[at] << ", want " << want);
          return;
        }
      }
  // Padding between rows is left alone.
  if (g.pad > 0 && g.beta != 0.f) CHECK(out[g.n] == doctest::Approx(cr[g.n]));
  CHECK(true);
}

}  // namespace

TEST_CASE("cuda gemm: row-major strided batched product against a naive loop") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      GemmCase g;
      g.ta = ta;
      g.tb = tb;
      check_gemm(g);
      g.repeat_b = true;  // one B for every batch item (MatMul against a weight)
      check_gemm(g);
      g.alpha = 0.5f;
      g.beta = 1.5f;  // accumulate into C
      check_gemm(g);
      g.f16 = true;
      check_gemm(g);
    }
  SUBCASE("odd sizes, no padding, one batch item") {
    GemmCase g;
    g.m = 33, g.n = 17, g.k = 65, g.batch = 1, g.pad = 0;
    check_gemm(g);
    g.f16 = true;
    check_gemm(g);
  }
  SUBCASE("k == 0 gives alpha * 0 + beta * C") {
    GemmCase g;
    g.k = 0;
    check_gemm(g);
    g.beta = 2.f;
    check_gemm(g);
  }
  SUBCASE("empty m, n or batch does nothing") {
    cuda::gemm(cuda::GemmType::F32, false, false, 0, 4, 4, 1.f, nullptr, 4, 0, nullptr, 4, 0, 0.f, nullptr, 4, 0, 1);
    cuda::gemm(cuda::GemmType::F32, false, false, 4, 4, 4, 1.f, nullptr, 4, 0, nullptr, 4, 0, 0.f, nullptr, 4, 0, 0);
    CHECK(true);
  }
}

namespace {

/// A one-node graph: `op` over inputs of the given types (empty type: unknown at plan time).
struct OneNode {
  ir::Model model = test::empty_model(17);
  ir::Node* node = nullptr;
  OneNode(const std::string& op, std::vector<DType> types, std::string domain = "") {
    ir::Graph& g = *model.graph;
    std::vector<ir::Value*> ins;
    for (size_t i = 0; i < types.size(); ++i) {
      ir::Value& v = g.add_value("x" + std::to_string(i));
      v.dtype = types[i];
      ins.push_back(&v);
    }
    node = &g.add_node(op, std::move(domain), "n", ins, {"y"});
    node->since_version = 13;
  }
  std::vector<DType> types() const {
    std::vector<DType> t;
    for (const ir::Value* v : node->inputs) t.push_back(v ? v->dtype : DType::Undefined);
    return t;
  }
};

backends::Kernel no_kernel(const ir::Node&) { return [](backends::KernelContext&) {}; }

}  // namespace

TEST_CASE("cuda OpTable: op, opset range and domain lookups with reasons") {
  backends::cuda::OpTable t;
  t.add("Foo", 6, 12, no_kernel, backends::cuda::float_inputs(), {1});
  t.add("Foo", 13, 0, no_kernel, backends::cuda::numeric_inputs(), {});
  t.add("Bar", 1, 0, no_kernel, nullptr);
  CHECK(t.ops() == std::vector<std::string>{"Bar", "Foo"});

  OneNode foo("Foo", {DType::I64});
  CHECK(t.supports(*foo.node, foo.types()).ok);  // opset 13: numeric
  CHECK(t.find(*foo.node) != nullptr);
  CHECK(t.host_inputs(*foo.node).empty());
  foo.node->since_version = 11;  // opset 6..12: float only
  backends::Support s = t.supports(*foo.node, foo.types());
  CHECK_FALSE(s.ok);
  CHECK(s.reason == "input 0 is i64");
  CHECK(t.host_inputs(*foo.node) == std::vector<size_t>{1});
  foo.node->since_version = 5;
  s = t.supports(*foo.node, foo.types());
  CHECK(s.reason == "the cuda backend has no kernel for Foo at opset 5");
  CHECK(t.find(*foo.node) == nullptr);

  OneNode other("Foo", {DType::F32}, "com.microsoft");
  s = t.supports(*other.node, other.types());
  CHECK_FALSE(s.ok);
  CHECK(s.reason == "domain com.microsoft");
  OneNode unknown("Baz", {DType::F32});
  CHECK(t.supports(*unknown.node, unknown.types()).reason == "op Baz has no cuda kernel");
  OneNode bar("Bar", {DType::String});
  CHECK(t.supports(*bar.node, bar.types()).ok);  // no check: every type
}

TEST_CASE("cuda OpTable: common element-type checks") {
  using namespace backends::cuda;
  OneNode n("Op", {DType::F32, DType::I8, DType::Undefined, DType::String});
  const auto types = n.types();
  CHECK(float_inputs({0})(*n.node, types) == "");
  CHECK(float_inputs({0, 1})(*n.node, types) == "input 1 is i8");
  CHECK(float_inputs({2})(*n.node, types) == "input 2 type unknown at plan time");
  CHECK(float_inputs()(*n.node, types) == "input 1 is i8");  // every present input
  CHECK(numeric_inputs({1})(*n.node, types) == "input 1 is i8");
  CHECK(any_fixed_width({0, 1})(*n.node, types) == "");
  CHECK(any_fixed_width({3})(*n.node, types) == "input 3 is string");
  CHECK(all_of({float_inputs({0}), any_fixed_width({1}), numeric_inputs({1})})(*n.node, types) == "input 1 is i8");
  CHECK(all_of({float_inputs({0})})(*n.node, types) == "");
  CHECK(float_inputs({7})(*n.node, types) == "");  // absent optional input
  OneNode h("Op", {DType::F16, DType::I32, DType::I64});
  CHECK(numeric_inputs()(*h.node, h.types()) == "");
  CHECK(float_inputs({0})(*h.node, h.types()) == "");
}

TEST_CASE("cuda backend: unsupported nodes are declined with a reason and have no kernel") {
  const backends::Backend& b = cuda_be();
  OneNode ms("Foo", {DType::F32}, "com.microsoft");
  CHECK(b.supports(*ms.node, ms.types()).reason == "domain com.microsoft");
  OneNode loop("Loop", {DType::I64, DType::Bool});  // subgraph ops stay on the cpu
  CHECK_FALSE(b.supports(*loop.node, loop.types()).ok);
  OneNode none("NoSuchOp", {DType::F32});
  CHECK_FALSE(b.supports(*none.node, none.types()).ok);
  try {
    (void)b.create_kernel(*none.node);
    FAIL("create_kernel should throw");
  } catch (const UnsupportedError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("NoSuchOp") != std::string::npos);
    CHECK(msg.find("opset 13") != std::string::npos);
    CHECK(msg.find("cuda backend") != std::string::npos);
  }
}

namespace {

/// y = Relu(Hardmax(Add(Relu(x), w))): Add and Relu are elementwise cuda kernels, Hardmax has none.
/// (The first Relu makes Add read a computed float, so placement keeps Add on the device.)
ir::Model mixed_model() {
  ir::Model m = test::empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "x", {3, 5});
  ir::Value& w = test::add_random_init(g, "w", {3, 5}, 7);
  ir::Node& first = test::add_node(g, "Relu", "first", {&x}, {"r"}, 17);
  ir::Node& add = test::add_node(g, "Add", "add", {first.outputs[0], &w}, {"a"}, 17);
  ir::Node& hm = test::add_node(g, "Hardmax", "hardmax", {add.outputs[0]}, {"h"}, 17);
  ir::Node& relu = test::add_node(g, "Relu", "relu", {hm.outputs[0]}, {"y"}, 17);
  g.outputs.push_back(relu.outputs[0]);
  return m;
}

const ir::Node& node_named(const ir::Model& m, const std::string& name) {
  for (const ir::Node* n : m.graph->nodes())
    if (n->name == name) return *n;
  throw InternalError("no node " + name);
}

}  // namespace

TEST_CASE("cuda backend: the executor places a mixed graph and counts its transfers") {
  const ir::Model m = mixed_model();
  const Tensor x = test::random_tensor({3, 5}, 11);
  backends::ExecOptions cpu_opts;
  cpu_opts.threads = 1;
  backends::Executor ref(m, cpu_opts);
  const Tensor want = ref.run({{"x", backends::RValue::of(x)}}).at(0).tensor;

  backends::ExecOptions o = cpu_opts;
  o.backend = &cuda_be();
  backends::Executor ex(m, o);
  for (int run = 0; run < 2; ++run) {
    const Tensor got = ex.run({{"x", backends::RValue::of(x)}}).at(0).tensor;
    REQUIRE(got.device().is_host());
    REQUIRE(got.dims() == want.dims());
    for (int64_t i = 0; i < want.numel(); ++i) CHECK(got.data<float>()[i] == doctest::Approx(want.data<float>()[i]));
  }
  const auto& st = ex.stats();
  CHECK(ex.placement_of(node_named(m, "hardmax")) == &backends::cpu_backend());
  const ir::Node& add = node_named(m, "add");
  const bool elementwise = cuda_be().supports(add, std::vector<DType>{DType::F32, DType::F32}).ok;
  if (!elementwise) {
    MESSAGE("the cuda backend has no Add kernel in this tree: every node runs on the cpu");
    CHECK(st.nodes_on_cpu == 4);
    CHECK(st.transfers == 0);
    return;
  }
  CHECK(ex.placement_of(add) == &cuda_be());
  CHECK(ex.placement_of(node_named(m, "relu")) == &cuda_be());
  CHECK(ex.placement_of(node_named(m, "first")) == &cuda_be());
  CHECK(st.nodes_on_requested == 3);
  CHECK(st.nodes_on_cpu == 1);
  // Per run: x up, a down (to Hardmax), h up (to Relu), y down. w is uploaded once.
  CHECK(st.transfers == 8);
  CHECK(st.transfer_bytes == 8 * 15 * 4);
  CHECK(st.initializer_uploads == 1);
  CHECK(st.initializer_bytes == 15 * 4);
  CHECK(st.transfer_seconds >= 0);
}

}  // TEST_SUITE
}  // namespace mcc
