// The backend seam without a GPU: a fake device backend (Relu and same-shape Add on memory tagged
// as another device, Reshape reading its shape input on the host) checks placement, fallback
// counts, plan-time transfers, one-time initializer uploads, host inputs, outputs returned to the
// host, and that a host kernel refuses a device tensor.
#include <doctest/doctest.h>

#include <cstring>

#include "backends/executor.h"
#include "backends/placement.h"
#include "support/graph_builder.h"

namespace mcc::backends {
namespace {

constexpr ir::Device kFakeDevice{ir::DeviceType::Cuda, 7};

class FakeDeviceBuffer final : public ir::Buffer {
 public:
  explicit FakeDeviceBuffer(size_t n) : bytes_(n) { device_ = kFakeDevice; }
  const std::byte* data() const override { return bytes_.data(); }
  std::byte* mutable_data() override { return bytes_.data(); }
  size_t size() const override { return bytes_.size(); }

 private:
  std::vector<std::byte> bytes_;
};

class FakeDeviceBackend final : public Backend {
 public:
  std::string_view name() const override { return "fake"; }
  ir::Device device() const override { return kFakeDevice; }
  Support supports(const ir::Node& n, std::span<const ir::DType> dts) const override {
    if (!n.is("Relu") && !n.is("Add") && !n.is("Reshape")) return Support::no("op " + n.op_type + " has no fake kernel");
    if (dts.empty() || dts[0] != ir::DType::F32) return Support::no("input 0 is not f32");
    return Support::yes();
  }
  std::vector<size_t> host_inputs(const ir::Node& n) const override {
    return n.is("Reshape") ? std::vector<size_t>{1} : std::vector<size_t>{};
  }
  Kernel create_kernel(const ir::Node& n) const override {
    if (n.is("Reshape"))
      return [](KernelContext& ctx) {
        const ir::Tensor& shape = ctx.in(1);  // a host input: readable here
        std::vector<int64_t> dims(shape.data<int64_t>().begin(), shape.data<int64_t>().end());
        ctx.set_output(0, ctx.in(0).reshaped(dims));
      };
    const bool add = n.is("Add");
    return [add](KernelContext& ctx) {
      const ir::Tensor& a = ctx.in(0);
      CHECK(a.device() == kFakeDevice);
      ir::Tensor& y = ctx.alloc_output(0, a.dtype(), a.dims());
      CHECK(y.device() == kFakeDevice);
      const float* pa = static_cast<const float*>(a.device_data());
      const float* pb = add ? static_cast<const float*>(ctx.in(1).device_data()) : nullptr;
      float* py = static_cast<float*>(y.mutable_device_data());
      for (int64_t i = 0; i < a.numel(); ++i) py[i] = add ? pa[i] + pb[i] : (pa[i] > 0 ? pa[i] : 0.f);
    };
  }
  std::shared_ptr<ir::Buffer> allocate(size_t bytes) const override { return std::make_shared<FakeDeviceBuffer>(bytes); }
  ir::Tensor upload(const ir::Tensor& host) const override {
    auto buf = allocate(host.nbytes());
    if (host.nbytes()) std::memcpy(buf->mutable_data(), host.raw(), host.nbytes());
    ++uploads;
    return ir::Tensor::from_buffer(host.dtype(), host.dims(), std::move(buf));
  }
  ir::Tensor download(const ir::Tensor& dev) const override {
    ir::Tensor t = ir::Tensor::allocate(dev.dtype(), dev.dims());
    if (dev.nbytes()) std::memcpy(t.mutable_raw(), dev.device_data(), dev.nbytes());
    ++downloads;
    return t;
  }
  mutable int uploads = 0, downloads = 0;
};

// x -> Relu -> Add(w) -> Sigmoid (cpu only) -> Reshape(shape) -> Relu -> y
ir::Model chain_model() {
  ir::Model m = test::empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "x", {2, 3});
  ir::Value& w = test::add_random_init(g, "w", {2, 3}, 5);
  ir::Value& shape = g.add_initializer("shape", ir::Tensor::from_vector<int64_t>({2}, {3, 2}));
  ir::Node& r1 = g.add_node("Relu", "", "relu1", {&x}, {"r1"});
  ir::Node& add = g.add_node("Add", "", "add", {r1.outputs[0], &w}, {"a"});
  ir::Node& sig = g.add_node("Sigmoid", "", "sig", {add.outputs[0]}, {"s"});
  ir::Node& rs = g.add_node("Reshape", "", "reshape", {sig.outputs[0], &shape}, {"rs"});
  ir::Node& r2 = g.add_node("Relu", "", "relu2", {rs.outputs[0]}, {"y"});
  g.outputs.push_back(r2.outputs[0]);
  for (ir::Node* n : g.nodes()) n->since_version = 14;
  return m;
}

TEST_CASE("placement: supported nodes on the requested backend, others on the cpu with a reason") {
  const ir::Model m = chain_model();
  FakeDeviceBackend fake;
  const PlacementReport r = plan_placement(m, fake);
  CHECK(r.nodes == 5);
  REQUIRE(r.nodes_per_backend.size() == 2);
  CHECK(r.nodes_per_backend[0].backend == "fake");
  CHECK(r.nodes_per_backend[0].nodes == 4);
  CHECK(r.nodes_per_backend[1].nodes == 1);
  REQUIRE(r.fallbacks.size() == 1);
  CHECK(r.fallbacks[0].node == "sig");
  CHECK(r.fallbacks[0].reason == "op Sigmoid has no fake kernel");
  // x up; a down to the cpu Sigmoid; s up to Reshape; y down at the end. w is uploaded once and
  // the shape is a host input already on the host.
  CHECK(r.transfers == 4);
  CHECK(r.uploaded_initializers == 1);
}

TEST_CASE("executor: runs across devices, moves data at plan-time points, uploads initializers once") {
  const ir::Model m = chain_model();
  FakeDeviceBackend fake;
  ExecOptions eo;
  eo.threads = 1;
  eo.backend = &fake;
  Executor cross(m, eo);
  Executor cpu(m, ExecOptions{1});
  const ir::Tensor x = test::random_tensor({2, 3}, 11);
  const std::vector<std::pair<std::string, RValue>> feeds{{"x", RValue::of(x)}};
  for (int run = 0; run < 2; ++run) {
    const auto got = cross.run(feeds);
    const auto want = cpu.run(feeds);
    REQUIRE(got.size() == 1);
    CHECK(got[0].tensor.device().is_host());
    CHECK(got[0].tensor.dims() == std::vector<int64_t>{3, 2});
    const auto g = got[0].tensor.data<float>(), w = want[0].tensor.data<float>();
    CHECK(std::equal(g.begin(), g.end(), w.begin(), w.end()));
  }
  CHECK(cross.stats().nodes_on_requested == 4);
  CHECK(cross.stats().nodes_on_cpu == 1);
  CHECK(cross.stats().initializer_uploads == 1);  // w, once for both runs
  CHECK(cross.stats().transfers == 8);            // 4 per run
  CHECK(cross.placement_of(*m.graph->nodes()[2])->name() == "cpu");
  CHECK(cross.placement_of(*m.graph->nodes()[0])->name() == "fake");
}

TEST_CASE("a released device buffer is never reused for a cpu node's output") {
  // x (4 KiB) -> Relu (fake device) -> Sigmoid (cpu) -> Relu (fake) -> Sigmoid (cpu): the device
  // intermediate dies before the second cpu output of the same size is allocated.
  ir::Model m = test::empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value* v = &test::add_input(g, "x", {32, 32});
  const char* ops[] = {"Relu", "Sigmoid", "Relu", "Sigmoid"};
  for (int i = 0; i < 4; ++i) {
    ir::Node& n = g.add_node(ops[i], "", "n" + std::to_string(i), {v}, {"v" + std::to_string(i)});
    n.since_version = 13;
    v = n.outputs[0];
  }
  g.outputs.push_back(v);
  FakeDeviceBackend fake;
  ExecOptions eo;
  eo.threads = 1;
  eo.backend = &fake;
  Executor cross(m, eo);
  Executor cpu(m, ExecOptions{1});
  const std::vector<std::pair<std::string, RValue>> feeds{{"x", RValue::of(test::random_tensor({32, 32}, 3))}};
  for (int run = 0; run < 3; ++run) {
    const auto got = cross.run(feeds), want = cpu.run(feeds);
    const auto a = got[0].tensor.data<float>(), b = want[0].tensor.data<float>();
    CHECK(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  }
}

TEST_CASE("a host kernel handed a device tensor fails loudly instead of reading device memory") {
  FakeDeviceBackend fake;
  const ir::Tensor dev = fake.upload(ir::Tensor::from_vector<float>({2}, {1.f, 2.f}));
  CHECK(dev.device() == kFakeDevice);
  CHECK_THROWS_AS(dev.data<float>(), InternalError);
  CHECK_THROWS_AS(dev.clone(), InternalError);
  CHECK(fake.download(dev).data<float>()[1] == 2.f);
}

TEST_CASE("a backend that declines unknown input types sends the node to the cpu") {
  ir::Model m = test::empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value& x = g.add_value("x");  // no declared type
  x.is_graph_input = true;
  g.inputs.push_back(&x);
  ir::Node& r = g.add_node("Relu", "", "relu", {&x}, {"y"});
  r.since_version = 14;
  g.outputs.push_back(r.outputs[0]);
  FakeDeviceBackend fake;
  const PlacementReport rep = plan_placement(m, fake);
  REQUIRE(rep.fallbacks.size() == 1);
  CHECK(rep.fallbacks[0].reason == "input 0 is not f32");
}

}  // namespace
}  // namespace mcc::backends
