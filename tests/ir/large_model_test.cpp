// Large-model suite: a > 2 GB model with external data (generated at test time in a temporary
// folder) loads through mmap, saves with its data external, and the bytes survive; a model that
// would exceed 2 GB inline is saved with its large tensors moved to external data.
#include <doctest/doctest.h>
#include <google/protobuf/util/message_differencer.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/onnx_io.h"
#include "support/paths.h"

namespace fs = std::filesystem;
using namespace mcc;

namespace {

constexpr int kTensors = 4;
constexpr int64_t kElems = 150LL << 20;  // 600 MiB of f32 each, 2.4 GiB in all
constexpr size_t kTensorBytes = static_cast<size_t>(kElems) * 4;

/// Writes the external data file: tensor i holds a pattern that differs per tensor and per 4 MB.
void write_weights(const fs::path& p) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::vector<uint32_t> chunk(1u << 20);
  for (int t = 0; t < kTensors; ++t)
    for (size_t done = 0; done < kTensorBytes; done += chunk.size() * 4) {
      const size_t n = std::min(chunk.size() * 4, kTensorBytes - done);
      for (size_t i = 0; i < chunk.size(); ++i)
        chunk[i] = static_cast<uint32_t>(t * 1000003u + done / 4 + i);
      REQUIRE(std::fwrite(chunk.data(), 1, n, f) == n);
    }
  REQUIRE(std::fclose(f) == 0);
}

onnx::ModelProto big_model() {
  onnx::ModelProto m;
  m.set_ir_version(9);
  m.add_opset_import()->set_version(19);
  auto* g = m.mutable_graph();
  g->set_name("big");
  for (int t = 0; t < kTensors; ++t) {
    const std::string w = "W" + std::to_string(t), y = "Y" + std::to_string(t);
    auto* init = g->add_initializer();
    init->set_name(w);
    init->set_data_type(onnx::TensorProto::FLOAT);
    init->add_dims(kElems);
    init->set_data_location(onnx::TensorProto::EXTERNAL);
    const std::pair<const char*, std::string> kvs[] = {
        {"location", "weights.bin"}, {"offset", std::to_string(t * kTensorBytes)}, {"length", std::to_string(kTensorBytes)}};
    for (const auto& [k, v] : kvs) {
      auto* e = init->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    auto* n = g->add_node();
    n->set_op_type("Identity");
    n->add_input(w);
    n->add_output(y);
    g->add_output()->set_name(y);
  }
  return m;
}

onnx::ModelProto read_proto(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  onnx::ModelProto m;
  REQUIRE(m.ParseFromIstream(&f));
  return m;
}
/// External data placement is rewritten on save (normalisation 3); compare everything else.
void drop_external_keys(onnx::ModelProto& m) {
  for (auto& t : *m.mutable_graph()->mutable_initializer()) t.clear_external_data();
}
bool same_tensor_bytes(const ir::Model& a, const ir::Model& b) {
  for (int t = 0; t < kTensors; ++t) {
    const std::string w = "W" + std::to_string(t);
    const ir::Tensor& x = *a.graph->find_value(w)->initializer;
    const ir::Tensor& y = *b.graph->find_value(w)->initializer;
    if (x.bytes().size() != kTensorBytes || y.bytes().size() != kTensorBytes) return false;
    if (std::memcmp(x.raw(), y.raw(), kTensorBytes) != 0) return false;
  }
  return true;
}

}  // namespace

TEST_SUITE("large") {

TEST_CASE("a 2.4 GB model with external data loads, saves and keeps its bytes") {
  test::TempDir tmp("mcc-large");
  write_weights(tmp.path / "weights.bin");
  const onnx::ModelProto proto = big_model();
  {
    std::ofstream f(tmp.path / "big.onnx", std::ios::binary);
    REQUIRE(proto.SerializeToOstream(&f));
  }
  const ir::Model m = ir::load_model((tmp.path / "big.onnx").string());
  CHECK(m.graph->initializers.size() == kTensors);

  fs::create_directories(tmp.path / "out");
  const fs::path out = tmp.path / "out" / "big.onnx";
  ir::save_model(m, out.string());
  CHECK(fs::file_size(out) < 4096);
  REQUIRE(fs::exists(tmp.path / "out" / "big.onnx.data"));
  CHECK(fs::file_size(tmp.path / "out" / "big.onnx.data") == kTensors * kTensorBytes);

  onnx::ModelProto a = proto, b = read_proto(out);
  for (const auto& t : b.graph().initializer()) CHECK(t.external_data(0).value() == "big.onnx.data");
  drop_external_keys(a);
  drop_external_keys(b);
  CHECK(google::protobuf::util::MessageDifferencer::Equals(a, b));
  const ir::Model back = ir::load_model(out.string());
  CHECK(same_tensor_bytes(m, back));
}

TEST_CASE("a model over 2 GB inline is saved with its large tensors external") {
  test::TempDir tmp("mcc-large");
  write_weights(tmp.path / "weights.bin");
  {
    std::ofstream f(tmp.path / "big.onnx", std::ios::binary);
    REQUIRE(big_model().SerializeToOstream(&f));
  }
  ir::Model m = ir::load_model((tmp.path / "big.onnx").string());
  for (ir::Value* v : m.graph->initializers) v->initializer->external.reset();  // as if built in memory
  const fs::path out = tmp.path / "inline.onnx";
  ir::save_model(m, out.string());
  CHECK(fs::file_size(out) < 4096);
  CHECK(fs::exists(tmp.path / "inline.onnx.data"));
  const ir::Model back = ir::load_model(out.string());
  CHECK(back.graph->find_value("W3")->initializer->external.has_value());
  CHECK(same_tensor_bytes(m, back));
}

}  // TEST_SUITE
