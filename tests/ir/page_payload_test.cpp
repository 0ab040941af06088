// Initializer payloads read into pages of their own (ir/onnx_import.cpp, kPagePayloadBytes):
// large and small raw_data load with their bytes; a raw_data field that appears twice in one
// TensorProto keeps protobuf's meaning (the last one wins), whichever of the two is large.
#include <doctest/doctest.h>
#include <onnx/onnx-data_pb.h>

#include <cstring>
#include <fstream>
#include <string>

#include "ir/onnx_io.h"
#include "support/paths.h"

using namespace mcc;

namespace {

std::string varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}

/// A length-delimited field `num` holding `payload`.
std::string field(int num, const std::string& payload) {
  return varint(static_cast<uint64_t>(num) << 3 | 2) + varint(payload.size()) + payload;
}

/// A float32 TensorProto `name` of `n` elements whose raw_data fields are `raws`, in order.
std::string tensor_bytes(const std::string& name, int64_t n, const std::vector<std::string>& raws) {
  onnx::TensorProto tp;
  tp.set_name(name);
  tp.add_dims(n);
  tp.set_data_type(onnx::TensorProto::FLOAT);
  std::string s = tp.SerializeAsString();
  for (const auto& r : raws) s += field(9, r);
  return s;
}

std::string floats(int64_t n, float v) {
  std::string s(static_cast<size_t>(n) * sizeof(float), '\0');
  for (int64_t i = 0; i < n; ++i) std::memcpy(s.data() + i * sizeof(float), &v, sizeof(float));
  return s;
}

/// Loads a model whose graph returns initializer W (Identity) and holds `w_bytes` as its TensorProto.
ir::Model load_with(const std::string& w_bytes) {
  onnx::ModelProto mp;
  mp.set_ir_version(8);
  mp.add_opset_import()->set_version(17);
  onnx::GraphProto gp;
  gp.set_name("g");
  auto* node = gp.add_node();
  node->set_op_type("Identity");
  node->add_input("W");
  node->add_output("Y");
  auto* out = gp.add_output();
  out->set_name("Y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  const std::string graph = gp.SerializeAsString() + field(5, w_bytes);
  const std::string bytes = mp.SerializeAsString() + field(7, graph);
  static test::TempDir dir("mcc-page-payload");
  const std::string path = (dir.path / "m.onnx").string();
  std::ofstream(path, std::ios::binary) << bytes;
  return ir::load_model(path);
}

std::string bytes_of(const ir::Model& m) {
  const ir::Value* w = m.graph->find_value("W");
  REQUIRE(w != nullptr);
  REQUIRE(w->initializer);
  return std::string(reinterpret_cast<const char*>(w->initializer->raw()), w->initializer->nbytes());
}

constexpr int64_t kLarge = 100000;  // 400,000 bytes: its own pages
constexpr int64_t kSmall = 64;

}  // namespace

TEST_CASE("page payloads: large and small initializers load with their bytes") {
  CHECK(bytes_of(load_with(tensor_bytes("W", kLarge, {floats(kLarge, 1.5f)}))) == floats(kLarge, 1.5f));
  CHECK(bytes_of(load_with(tensor_bytes("W", kSmall, {floats(kSmall, -2.f)}))) == floats(kSmall, -2.f));
}

TEST_CASE("page payloads: a repeated raw_data field keeps the last one") {
  // large, then large
  CHECK(bytes_of(load_with(tensor_bytes("W", kLarge, {floats(kLarge, 1.f), floats(kLarge, 2.f)}))) ==
        floats(kLarge, 2.f));
  // small, then large
  CHECK(bytes_of(load_with(tensor_bytes("W", kLarge, {floats(kSmall, 3.f), floats(kLarge, 4.f)}))) ==
        floats(kLarge, 4.f));
  // large, then small
  CHECK(bytes_of(load_with(tensor_bytes("W", kSmall, {floats(kLarge, 5.f), floats(kSmall, 6.f)}))) ==
        floats(kSmall, 6.f));
}
