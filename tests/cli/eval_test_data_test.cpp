// `mcc eval --golden` on ONNX test data that is not a plain tensor: sequence inputs and outputs,
// optional values (empty and present), bfloat16 stored as UINT16 (older test data), a map input
// refused as unsupported (exit 4) and a .pb file of the wrong kind refused as invalid data
// (exit 3), each naming the file. Models and .pb files are written here with protobuf.
#include <doctest/doctest.h>
#include <onnx/onnx-data_pb.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/onnx_proto.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using mcc::test::run_mcc;

namespace {

onnx::TypeProto float_tensor_type(int elem = onnx::TensorProto::FLOAT) {
  onnx::TypeProto t;
  t.mutable_tensor_type()->set_elem_type(elem);
  t.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("N");
  return t;
}
onnx::TypeProto sequence_type() {
  onnx::TypeProto t;
  *t.mutable_sequence_type()->mutable_elem_type() = float_tensor_type();
  return t;
}
onnx::TypeProto optional_type() {
  onnx::TypeProto t;
  *t.mutable_optional_type()->mutable_elem_type() = float_tensor_type();
  return t;
}
onnx::TypeProto map_type() {
  onnx::TypeProto t;
  t.mutable_map_type()->set_key_type(onnx::TensorProto::INT64);
  *t.mutable_map_type()->mutable_value_type() = float_tensor_type();
  return t;
}

// A one-node model: y = op(x) with the given declared types, written to dir/model.onnx.
std::string write_model(const fs::path& dir, const std::string& op, const onnx::TypeProto& in,
                        const onnx::TypeProto& out, int cast_to = 0) {
  onnx::ModelProto m = mcc::test::proto_model(8, 18, "g");
  auto* g = m.mutable_graph();
  auto* n = g->add_node();
  n->set_op_type(op);
  n->add_input("x");
  n->add_output("y");
  if (cast_to) {
    auto* a = n->add_attribute();
    a->set_name("to");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(cast_to);
  }
  auto* x = g->add_input();
  x->set_name("x");
  *x->mutable_type() = in;
  auto* y = g->add_output();
  y->set_name("y");
  *y->mutable_type() = out;
  const auto path = dir / "model.onnx";
  mcc::test::spit(path, m.SerializeAsString());
  return path.string();
}

onnx::TensorProto floats(const std::vector<float>& v) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(static_cast<int64_t>(v.size()));
  for (float f : v) t.add_float_data(f);
  return t;
}
onnx::TensorProto uint16s(const std::vector<int>& v) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::UINT16);
  t.add_dims(static_cast<int64_t>(v.size()));
  for (int x : v) t.add_int32_data(x);
  return t;
}
onnx::SequenceProto sequence_of(const std::vector<std::vector<float>>& elems) {
  onnx::SequenceProto s;
  s.set_elem_type(onnx::SequenceProto::TENSOR);
  for (const auto& e : elems) *s.add_tensor_values() = floats(e);
  return s;
}
onnx::OptionalProto optional_of(const std::vector<float>* v) {
  onnx::OptionalProto o;
  o.set_elem_type(v ? onnx::OptionalProto::TENSOR : onnx::OptionalProto::UNDEFINED);
  if (v) *o.mutable_tensor_value() = floats(*v);
  return o;
}

// dir/test_data_set_0/<file> with the message's bytes.
std::string put(const fs::path& dir, const std::string& file, const google::protobuf::Message& msg) {
  fs::create_directories(dir / "test_data_set_0");
  const auto p = dir / "test_data_set_0" / file;
  mcc::test::spit(p, msg.SerializeAsString());
  return p.string();
}

mcc::test::RunResult eval_golden(const std::string& model, const fs::path& dir) {
  return run_mcc({"eval", model, "--golden", (dir / "test_data_set_0").string(), "--json", "--threads", "1",
                  "--rtol", "1e-3", "--atol", "1e-7"});
}

}  // namespace

TEST_CASE("eval --golden: a sequence input and output are read as SequenceProto and compared element by element") {
  mcc::test::TempDir d("mcc-eval-seq");
  const auto model = write_model(d.path, "Identity", sequence_type(), sequence_type());
  put(d.path, "input_0.pb", sequence_of({{1, 2, 3}, {4.5f}}));
  put(d.path, "output_0.pb", sequence_of({{1, 2, 3}, {4.5f}}));
  auto r = eval_golden(model, d.path);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["passed"] == true);
  CHECK(j["outputs"][0]["kind"] == "sequence");
  CHECK(j["outputs"][0]["dtype"] == "f32");

  // One element off: exit 1 naming the element; a shorter expected sequence: exit 1 naming the lengths.
  put(d.path, "output_0.pb", sequence_of({{1, 2, 3}, {4.6f}}));
  r = eval_golden(model, d.path);
  CHECK(r.code == 1);
  CHECK(r.err.find("element 1") != std::string::npos);
  put(d.path, "output_0.pb", sequence_of({{1, 2, 3}}));
  r = eval_golden(model, d.path);
  CHECK(r.code == 1);
  CHECK(r.err.find("sequence length 2 vs expected 1") != std::string::npos);
}

TEST_CASE("eval --golden: optional outputs, empty and present, compare by presence and then by value") {
  mcc::test::TempDir d("mcc-eval-opt");
  const auto model = write_model(d.path, "Identity", optional_type(), optional_type());
  const std::vector<float> v{0.5f, -1.0f};
  // Empty in, empty expected: passes.
  put(d.path, "input_0.pb", optional_of(nullptr));
  put(d.path, "output_0.pb", optional_of(nullptr));
  auto r = eval_golden(model, d.path);
  INFO(r.err);
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["per_sample"][0]["outputs"][0]["kind"] == "none");
  CHECK(j["per_sample"][0]["outputs"][0]["passed"] == true);
  // Present in, present expected: passes by value.
  put(d.path, "input_0.pb", optional_of(&v));
  put(d.path, "output_0.pb", optional_of(&v));
  r = eval_golden(model, d.path);
  CHECK(r.code == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j["outputs"][0]["max_abs"].get<double>() == 0.0);
  // Present in, empty expected: fails, saying which kinds differ.
  put(d.path, "output_0.pb", optional_of(nullptr));
  r = eval_golden(model, d.path);
  CHECK(r.code == 1);
  CHECK(r.err.find("got a tensor, expected a none") != std::string::npos);
}

TEST_CASE("eval --golden: bfloat16 stored as UINT16 is read as bfloat16 bits, for inputs and outputs") {
  mcc::test::TempDir a("mcc-eval-bf16-in"), b("mcc-eval-bf16-out");
  // bf16 bits: 0x3F80 = 1.0, 0xC040 = -3.0, 0x4049 = 3.140625
  const auto to_float = write_model(a.path, "Cast", float_tensor_type(onnx::TensorProto::BFLOAT16), float_tensor_type(), onnx::TensorProto::FLOAT);
  put(a.path, "input_0.pb", uint16s({0x3F80, 0xC040, 0x4049}));
  put(a.path, "output_0.pb", floats({1.0f, -3.0f, 3.140625f}));
  auto r = eval_golden(to_float, a.path);
  INFO(r.err);
  CHECK(r.code == 0);

  const auto to_bf16 = write_model(b.path, "Cast", float_tensor_type(), float_tensor_type(onnx::TensorProto::BFLOAT16), onnx::TensorProto::BFLOAT16);
  put(b.path, "input_0.pb", floats({1.0f, -3.0f, 3.140625f}));
  put(b.path, "output_0.pb", uint16s({0x3F80, 0xC040, 0x4049}));
  r = eval_golden(to_bf16, b.path);
  CHECK(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["outputs"][0]["dtype"] == "bf16");
  CHECK(j["outputs"][0]["max_abs"].get<double>() == 0.0);
  put(b.path, "output_0.pb", uint16s({0x3F80, 0xC040, 0x4000}));  // last one 2.0: fails
  r = eval_golden(to_bf16, b.path);
  CHECK(r.code == 1);
}

TEST_CASE("eval --golden: a map value is refused as unsupported with one line naming the file") {
  mcc::test::TempDir d("mcc-eval-map");
  const auto model = write_model(d.path, "Identity", map_type(), map_type());
  onnx::MapProto mp;
  mp.set_key_type(onnx::TensorProto::INT64);
  mp.add_keys(7);
  mp.mutable_values()->set_elem_type(onnx::SequenceProto::TENSOR);
  *mp.mutable_values()->add_tensor_values() = floats({1.0f});
  put(d.path, "input_0.pb", mp);
  put(d.path, "output_0.pb", mp);
  const auto r = eval_golden(model, d.path);
  CHECK(r.code == 4);
  CHECK(mcc::test::one_error_line(r.err));
  INFO(r.err);
  CHECK((r.err.find("input_0.pb") != std::string::npos || r.err.find("model.onnx") != std::string::npos));
  CHECK(r.err.find("map") != std::string::npos);
}

TEST_CASE("eval --golden: a .pb file of another kind than the model declares exits 3 naming the file") {
  mcc::test::TempDir d("mcc-eval-wrong");
  // The model declares a sequence; the file holds a tensor.
  const auto seq_model = write_model(d.path, "Identity", sequence_type(), sequence_type());
  const auto in = put(d.path, "input_0.pb", floats({1, 2, 3}));
  put(d.path, "output_0.pb", sequence_of({{1, 2, 3}}));
  auto r = eval_golden(seq_model, d.path);
  CHECK(r.code == 3);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK(r.err.find(in) != std::string::npos);
  CHECK(r.err.find("sequence") != std::string::npos);

  // The model declares a tensor; the expected output file holds a sequence.
  mcc::test::TempDir e("mcc-eval-wrong2");
  const auto tensor_model = write_model(e.path, "Identity", float_tensor_type(), float_tensor_type());
  put(e.path, "input_0.pb", floats({1, 2, 3}));
  const auto out = put(e.path, "output_0.pb", sequence_of({{1, 2, 3}, {4}}));
  r = eval_golden(tensor_model, e.path);
  CHECK(r.code == 3);
  CHECK(mcc::test::one_error_line(r.err));
  CHECK(r.err.find(out) != std::string::npos);

  // The model declares an optional tensor; the file holds an optional sequence.
  mcc::test::TempDir f("mcc-eval-wrong3");
  const auto opt_model = write_model(f.path, "Identity", optional_type(), optional_type());
  onnx::OptionalProto os;
  os.set_elem_type(onnx::OptionalProto::SEQUENCE);
  *os.mutable_sequence_value() = sequence_of({{1}});
  const auto opt_in = put(f.path, "input_0.pb", os);
  put(f.path, "output_0.pb", optional_of(nullptr));
  r = eval_golden(opt_model, f.path);
  CHECK(r.code == 3);
  CHECK(r.err.find(opt_in) != std::string::npos);
}
