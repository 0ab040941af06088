// ONNX import/export unit tests: tensor encodings, scopes and sorting, external data, bad files,
// passthrough of fields mcc does not model, and atomic, deterministic saving.
#include <doctest/doctest.h>
#include <onnx/onnx-data_pb.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <filesystem>
#include <random>

#include "ir/onnx_io.h"
#include "support/onnx_proto.h"
#include "support/files.h"
#include "support/paths.h"

namespace fs = std::filesystem;
using namespace mcc;
using mcc::test::slurp;
using mcc::test::spit;

namespace {

/// A model with one graph input X (f32[2]) and one output Y; the caller adds nodes/initializers.
onnx::ModelProto base_model() {
  onnx::ModelProto m = test::proto_model(8, 17, "g");
  auto* g = m.mutable_graph();
  auto* x = g->add_input();
  x->set_name("X");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  g->add_output()->set_name("Y");
  return m;
}
onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> ins,
                          std::vector<std::string> outs, const std::string& name) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : ins) n->add_input(i);
  for (auto& o : outs) n->add_output(o);
  return n;
}
ir::Model load_proto(const onnx::ModelProto& m, const fs::path& file) {
  spit(file, m.SerializeAsString());
  return ir::load_model(file.string());
}
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ModelError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("WRONG TYPE: ") + e.what();
  }
  return "NO ERROR";
}

}  // namespace

TEST_CASE("import converts typed-field tensors to raw bytes") {
  test::TempDir tmp;
  auto m = base_model();
  auto* g = m.mutable_graph();
  add_node(g, "Identity", {"X"}, {"Y"}, "id");
  auto init = [&](const char* name, int dt, int n) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(dt);
    t->add_dims(n);
    return t;
  };
  auto* f = init("f", onnx::TensorProto::FLOAT, 2);
  f->add_float_data(1.5f);
  f->add_float_data(-2.0f);
  auto* i8 = init("i8", onnx::TensorProto::INT8, 3);
  for (int v : {-1, 2, -128}) i8->add_int32_data(v);
  auto* u16 = init("u16", onnx::TensorProto::UINT16, 1);
  u16->add_int32_data(65535);
  auto* b = init("b", onnx::TensorProto::BOOL, 2);
  b->add_int32_data(1);
  b->add_int32_data(0);
  auto* i64 = init("i64", onnx::TensorProto::INT64, 2);
  i64->add_int64_data(-5);
  i64->add_int64_data(1LL << 40);
  auto* d = init("d", onnx::TensorProto::DOUBLE, 1);
  d->add_double_data(0.25);
  auto* u32 = init("u32", onnx::TensorProto::UINT32, 1);
  u32->add_uint64_data(4000000000u);
  auto* s = init("s", onnx::TensorProto::STRING, 2);
  s->add_string_data("ab");
  s->add_string_data("");

  const ir::Model model = load_proto(m, tmp.path / "m.onnx");
  auto T = [&](const char* n) -> const ir::Tensor& { return *model.graph->find_value(n)->initializer; };
  CHECK(T("f").data<float>()[0] == 1.5f);
  CHECK(T("f").data<float>()[1] == -2.0f);
  CHECK(T("i8").data<int8_t>()[0] == -1);
  CHECK(T("i8").data<int8_t>()[2] == -128);
  CHECK(T("u16").data<uint16_t>()[0] == 65535);
  CHECK(T("b").data<bool>()[0] == true);
  CHECK(T("b").data<bool>()[1] == false);
  CHECK(T("i64").data<int64_t>()[1] == (1LL << 40));
  CHECK(T("d").data<double>()[0] == 0.25);
  CHECK(T("u32").data<uint32_t>()[0] == 4000000000u);
  CHECK(T("s").strings() == std::vector<std::string>{"ab", ""});

  // Export writes raw_data (normalisation 1), except for strings.
  onnx::ModelProto out;
  REQUIRE(out.ParseFromString(ir::serialize_model(model)));
  for (const auto& t : out.graph().initializer()) {
    CAPTURE(t.name());
    if (t.data_type() == onnx::TensorProto::STRING) CHECK(t.string_data_size() == 2);
    else CHECK(t.has_raw_data());
    CHECK(t.float_data_size() + t.int32_data_size() + t.int64_data_size() + t.double_data_size() +
              t.uint64_data_size() == 0);
  }
}

TEST_CASE("import reads f16 values stored one per element in int32_data") {
  test::TempDir tmp;
  auto m = base_model();
  add_node(m.mutable_graph(), "Identity", {"X"}, {"Y"}, "id");
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("h");
  t->set_data_type(onnx::TensorProto::FLOAT16);
  t->add_dims(2);
  t->add_int32_data(0x3C00);  // 1.0
  t->add_int32_data(0xC000);  // -2.0
  const ir::Model model = load_proto(m, tmp.path / "m.onnx");
  const ir::Tensor& h = *model.graph->find_value("h")->initializer;
  REQUIRE(h.dtype() == ir::DType::F16);
  REQUIRE(h.bytes().size() == 4);
  uint16_t bits[2];
  std::memcpy(bits, h.raw(), 4);
  CHECK(bits[0] == 0x3C00);
  CHECK(bits[1] == 0xC000);
  CHECK(static_cast<float>(h.data<f16>()[1]) == -2.0f);
}

TEST_CASE("import sorts a graph whose nodes are out of order") {
  test::TempDir tmp;
  auto m = base_model();
  auto* g = m.mutable_graph();
  add_node(g, "Relu", {"A"}, {"Y"}, "second");
  add_node(g, "Neg", {"X"}, {"A"}, "first");
  const ir::Model model = load_proto(m, tmp.path / "m.onnx");
  REQUIRE(model.graph->nodes().size() == 2);
  CHECK(model.graph->nodes()[0]->name == "first");
  CHECK(model.graph->nodes()[1]->name == "second");
  CHECK(model.graph->nodes()[1]->inputs[0] == model.graph->nodes()[0]->outputs[0]);
  CHECK(model.graph->nodes()[0]->since_version == 17);
}

TEST_CASE("subgraph nodes use outer values directly and the outer values record the use") {
  test::TempDir tmp;
  auto m = base_model();
  auto* g = m.mutable_graph();
  auto* cond = g->add_initializer();
  cond->set_name("C");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->set_raw_data(std::string(1, '\1'));
  auto* node = add_node(g, "If", {"C"}, {"Y"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = node->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* sg = a->mutable_g();
    sg->set_name(branch);
    add_node(sg, "Neg", {"X"}, {std::string(branch) + "_out"}, std::string(branch) + "_neg");
    sg->add_output()->set_name(std::string(branch) + "_out");
  }
  const ir::Model model = load_proto(m, tmp.path / "m.onnx");
  ir::Value* x = model.graph->find_value("X");
  ir::Graph* then_g = model.graph->nodes()[0]->attr_graph("then_branch");
  REQUIRE(then_g != nullptr);
  CHECK(then_g->parent() == model.graph.get());
  ir::Node* neg = then_g->nodes()[0];
  CHECK(neg->inputs[0] == x);
  CHECK(x->uses.size() == 2);
  CHECK(std::find(x->uses.begin(), x->uses.end(), ir::Use{neg, 0}) != x->uses.end());
  CHECK(then_g->find_value("X") == nullptr);  // no local copy
}

TEST_CASE("external data is mapped, kept external on save, and missing files are clear errors") {
  test::TempDir tmp;
  std::vector<float> w(1000);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.5f;
  spit(tmp.path / "weights.bin", std::string(16, 'x') + std::string(reinterpret_cast<const char*>(w.data()), 4000));
  auto m = base_model();
  auto* g = m.mutable_graph();
  add_node(g, "Identity", {"X"}, {"Y"}, "id");
  auto* t = g->add_initializer();
  t->set_name("W");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(1000);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "weights.bin");
  kv("offset", "16");
  kv("length", "4000");

  const ir::Model model = load_proto(m, tmp.path / "m.onnx");
  const ir::Tensor& W = *model.graph->find_value("W")->initializer;
  CHECK(W.data<float>()[999] == 499.5f);
  REQUIRE(W.external.has_value());
  CHECK(W.external->location == "weights.bin");

  fs::create_directories(tmp.path / "out");
  ir::save_model(model, (tmp.path / "out" / "saved.onnx").string());
  CHECK(fs::exists(tmp.path / "out" / "saved.onnx.data"));
  const ir::Model again = ir::load_model((tmp.path / "out" / "saved.onnx").string());
  const ir::Tensor& W2 = *again.graph->find_value("W")->initializer;
  CHECK(W2.external->location == "saved.onnx.data");
  CHECK(std::memcmp(W2.raw(), W.raw(), 4000) == 0);

  // Saving over the input model and its mapped data file replaces them by rename: the loaded
  // model's mapping still reads the old bytes, and the new files hold the same values.
  ir::SaveOptions same;
  same.external_file = "weights.bin";
  ir::save_model(model, (tmp.path / "m.onnx").string(), same);
  CHECK(W.data<float>()[999] == 499.5f);
  const ir::Model over = ir::load_model((tmp.path / "m.onnx").string());
  const ir::Tensor& W3 = *over.graph->find_value("W")->initializer;
  CHECK(W3.external->offset == 0);
  CHECK(std::memcmp(W3.raw(), W.raw(), 4000) == 0);
  spit(tmp.path / "m.onnx", m.SerializeAsString());
  spit(tmp.path / "weights.bin", std::string(16, 'x') + std::string(reinterpret_cast<const char*>(w.data()), 4000));

  // Missing file, short file, escaping paths: ModelError naming the tensor and the file.
  fs::remove(tmp.path / "weights.bin");
  std::string err = error_of([&] { load_proto(m, tmp.path / "m.onnx"); });
  CHECK(err.find("'W'") != std::string::npos);
  CHECK(err.find("weights.bin") != std::string::npos);
  spit(tmp.path / "weights.bin", std::string(100, 'x'));
  err = error_of([&] { load_proto(m, tmp.path / "m.onnx"); });
  CHECK(err.find("too short") != std::string::npos);
  t->mutable_external_data(0)->set_value("../weights.bin");
  CHECK(error_of([&] { load_proto(m, tmp.path / "m.onnx"); }).find("escapes") != std::string::npos);
  t->mutable_external_data(0)->set_value("/etc/passwd");
  CHECK(error_of([&] { load_proto(m, tmp.path / "m.onnx"); }).find("absolute") != std::string::npos);
}

TEST_CASE("truncated, random, empty and missing files give ModelError naming the file") {
  test::TempDir tmp;
  auto m = base_model();
  add_node(m.mutable_graph(), "Identity", {"X"}, {"Y"}, "id");
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("W");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(64);
  t->set_raw_data(std::string(256, '\0'));
  const std::string good = m.SerializeAsString();
  const fs::path f = tmp.path / "bad.onnx";

  for (size_t cut : {good.size() / 2, good.size() - 1, size_t{3}}) {
    spit(f, good.substr(0, cut));
    CAPTURE(cut);
    CHECK(error_of([&] { ir::load_model(f.string()); }).find("bad.onnx") != std::string::npos);
  }
  std::mt19937 rng(7);
  int errors = 0;
  for (int trial = 0; trial < 50; ++trial) {
    std::string junk(1 + rng() % 4096, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    spit(f, junk);
    if (error_of([&] { ir::load_model(f.string()); }).find("bad.onnx") != std::string::npos) ++errors;
  }
  CHECK(errors == 50);
  spit(f, "");
  CHECK(error_of([&] { ir::load_model(f.string()); }).find("empty") != std::string::npos);
  CHECK(error_of([&] { ir::load_model((tmp.path / "nope.onnx").string()); }).find("nope.onnx") != std::string::npos);
  CHECK(error_of([&] { ir::load_model(tmp.path.string()); }).find("regular file") != std::string::npos);
}

TEST_CASE("undefined inputs and duplicate names are ModelErrors") {
  test::TempDir tmp;
  auto m = base_model();
  add_node(m.mutable_graph(), "Add", {"X", "ghost"}, {"Y"}, "adder");
  std::string err = error_of([&] { load_proto(m, tmp.path / "m.onnx"); });
  CHECK(err.find("'ghost'") != std::string::npos);
  CHECK(err.find("adder") != std::string::npos);

  auto d = base_model();
  add_node(d.mutable_graph(), "Neg", {"X"}, {"Y"}, "a");
  add_node(d.mutable_graph(), "Neg", {"X"}, {"Y"}, "b");
  CHECK(error_of([&] { load_proto(d, tmp.path / "m.onnx"); }).find("twice") != std::string::npos);
}

TEST_CASE("unknown dtype codes and unknown protobuf fields survive a round trip") {
  test::TempDir tmp;
  auto m = base_model();
  auto* n = add_node(m.mutable_graph(), "Identity", {"X"}, {"Y"}, "id");
  // NodeProto.overload (8) and metadata_props (9), ModelProto.configuration (26): newer fields.
  auto* ufs = n->GetReflection()->MutableUnknownFields(n);
  ufs->AddLengthDelimited(8, "ovl");
  onnx::StringStringEntryProto e;
  e.set_key("k");
  e.set_value("v");
  ufs->AddLengthDelimited(9, e.SerializeAsString());
  m.GetReflection()->MutableUnknownFields(&m)->AddLengthDelimited(26, "cfg");
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("odd");
  t->set_data_type(42);
  t->add_dims(3);
  t->set_raw_data("abcde");

  const ir::Model model = load_proto(m, tmp.path / "m.onnx");
  const ir::Tensor& odd = *model.graph->find_value("odd")->initializer;
  CHECK(static_cast<int>(odd.dtype()) == 42);
  CHECK(odd.bytes().size() == 5);
  const ir::Node& node = *model.graph->nodes()[0];
  REQUIRE(node.metadata_props.size() == 1);
  CHECK(node.metadata_props[0].second == "v");

  const std::string bytes = ir::serialize_model(model);
  onnx::ModelProto out;
  REQUIRE(out.ParseFromString(bytes));
  CHECK(out.graph().initializer(0).data_type() == 42);
  CHECK(out.graph().initializer(0).raw_data() == "abcde");
  const auto& nu = out.graph().node(0).unknown_fields();
  REQUIRE(nu.field_count() == 2);
  CHECK(nu.field(0).length_delimited() == "ovl");
  CHECK(out.unknown_fields().field_count() == 1);
  CHECK(out.unknown_fields().field(0).number() == 26);
  // Deterministic and stable: save → load → save gives the same bytes.
  CHECK(ir::serialize_model(ir::load_model_from_bytes(bytes, tmp.path.string())) == bytes);
}

TEST_CASE("save is atomic: the output may name the input, and failures leave no files") {
  test::TempDir tmp;
  auto m = base_model();
  add_node(m.mutable_graph(), "Identity", {"X"}, {"Y"}, "id");
  const fs::path f = tmp.path / "m.onnx";
  ir::Model model = load_proto(m, f);
  model.producer_name = "mcc-test";
  ir::save_model(model, f.string());
  CHECK(ir::load_model(f.string()).producer_name == "mcc-test");
  // save_model writes the same bytes as serialize_model.
  CHECK(slurp(f) == ir::serialize_model(model));

  CHECK_THROWS_AS(ir::save_model(model, (tmp.path / "no_such_dir" / "x.onnx").string()), ModelError);
  CHECK_THROWS(ir::save_model(model, tmp.path.string() + "/"));
  size_t n_files = 0;
  for (const auto& e : fs::directory_iterator(tmp.path)) { (void)e; ++n_files; }
  CHECK(n_files == 1);  // only m.onnx: no temporary left behind
}

TEST_CASE("tensor files: TensorProto round trip, sequences refused as unsupported") {
  test::TempDir tmp;
  const ir::Tensor t = ir::Tensor::from_vector<int64_t>({2}, {7, -9});
  ir::save_tensor_pb(t, (tmp.path / "t.pb").string());
  const ir::Tensor back = ir::load_tensor_pb((tmp.path / "t.pb").string());
  CHECK(back.dtype() == ir::DType::I64);
  CHECK(back.data<int64_t>()[1] == -9);

  onnx::SequenceProto seq;
  seq.set_name("s");
  seq.set_elem_type(onnx::SequenceProto::TENSOR);
  auto* st = seq.add_tensor_values();
  st->set_data_type(onnx::TensorProto::FLOAT);
  st->add_dims(1);
  st->add_float_data(1.0f);
  spit(tmp.path / "seq.pb", seq.SerializeAsString());
  CHECK_THROWS_AS(ir::load_tensor_pb((tmp.path / "seq.pb").string()), UnsupportedError);
}
