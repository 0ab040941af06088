// Value declarations through import → export: subgraph outputs without a type, with an empty
// `type {}` or with a tensor type lacking its element type come back as they were; a value
// declared in several roles (output and value_info, input and output, a subgraph output naming
// an outer value) keeps each declaration; a type a stage sets wins, and export never writes a
// tensor type without an element type of its own making. The CLI-level counterpart, over every
// optional field, is tests/cli/check_optional_fields.py (roundtrip suite).
#include <doctest/doctest.h>
#include <google/protobuf/util/message_differencer.h>
#include <onnx/onnx_pb.h>

#include <functional>

#include "support/onnx_proto.h"
#include "ir/onnx_io.h"

using namespace mcc;

namespace {

onnx::ValueInfoProto* typed(onnx::ValueInfoProto* vi, const std::string& name, int elem, std::vector<int64_t> dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* sh = tt->mutable_shape();
  for (int64_t d : dims) sh->add_dim()->set_dim_value(d);
  return vi;
}

void add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> ins, std::string out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  for (auto& i : ins) n->add_input(i);
  n->add_output(std::move(out));
}

/// main(cond, X f32[2]) -> If(cond) -> Y -> Loop(N, cond, Y) -> Z; the branches and the loop body
/// declare their outputs in the ways a test picks through `decl`.
onnx::ModelProto control_flow_model(const std::function<void(onnx::ValueInfoProto&, int)>& decl) {
  onnx::ModelProto m = test::proto_model(8, 17, "main");
  auto* g = m.mutable_graph();
  typed(g->add_input(), "cond", onnx::TensorProto::BOOL, {});
  typed(g->add_input(), "X", onnx::TensorProto::FLOAT, {2});
  typed(g->add_input(), "N", onnx::TensorProto::INT64, {});
  auto* ifn = g->add_node();
  ifn->set_op_type("If");
  ifn->add_input("cond");
  ifn->add_output("Y");
  for (int k = 0; k < 2; ++k) {
    auto* a = ifn->add_attribute();
    a->set_name(k == 0 ? "then_branch" : "else_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* b = a->mutable_g();
    b->set_name(k == 0 ? "then" : "else");
    add_node(b, k == 0 ? "Relu" : "Neg", {"X"}, b->name() + "_out");
    auto* out = b->add_output();
    out->set_name(b->name() + "_out");
    decl(*out, k);
  }
  auto* loop = g->add_node();
  loop->set_op_type("Loop");
  for (const char* i : {"N", "cond", "Y"}) loop->add_input(i);
  loop->add_output("Z");
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  auto* body = a->mutable_g();
  body->set_name("body");
  typed(body->add_input(), "i", onnx::TensorProto::INT64, {});
  typed(body->add_input(), "c", onnx::TensorProto::BOOL, {});
  typed(body->add_input(), "acc", onnx::TensorProto::FLOAT, {2});
  add_node(body, "Add", {"acc", "X"}, "acc_out");
  body->add_output()->set_name("c");  // the condition input passed straight through
  decl(*body->add_output(), 2);
  body->mutable_output(1)->set_name("acc_out");
  typed(g->add_output(), "Z", onnx::TensorProto::FLOAT, {2});
  return m;
}

ir::Model load(const onnx::ModelProto& m) { return ir::load_model_from_bytes(m.SerializeAsString(), "."); }

onnx::ModelProto saved(const ir::Model& m) {
  onnx::ModelProto out;
  REQUIRE(out.ParseFromString(ir::serialize_model(m)));
  return out;
}

std::string differences(const onnx::ModelProto& a, const onnx::ModelProto& b) {
  google::protobuf::util::MessageDifferencer diff;
  std::string report;
  diff.ReportDifferencesToString(&report);
  return diff.Compare(a, b) ? std::string() : report;
}

const onnx::GraphProto& subgraph(const onnx::ModelProto& m, int node, int attr) {
  return m.graph().node(node).attribute(attr).g();
}

}  // namespace

TEST_CASE("subgraph outputs without a type, with `type {}` or without an element type come back as they were") {
  const std::vector<std::pair<const char*, std::function<void(onnx::ValueInfoProto&)>>> forms = {
      {"no type", [](onnx::ValueInfoProto&) {}},
      {"type {}", [](onnx::ValueInfoProto& vi) { vi.mutable_type(); }},
      {"tensor_type {}", [](onnx::ValueInfoProto& vi) { vi.mutable_type()->mutable_tensor_type(); }},
      {"shape only", [](onnx::ValueInfoProto& vi) {
         vi.mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
       }},
      {"elem_type 0", [](onnx::ValueInfoProto& vi) { vi.mutable_type()->mutable_tensor_type()->set_elem_type(0); }},
  };
  for (const auto& [label, form] : forms) {
    CAPTURE(label);
    const onnx::ModelProto in = control_flow_model([&](onnx::ValueInfoProto& vi, int) { form(vi); });
    const onnx::ModelProto out = saved(load(in));
    CHECK(differences(in, out) == "");
    CHECK(subgraph(out, 0, 0).output(0).has_type() == subgraph(in, 0, 0).output(0).has_type());
  }
}

TEST_CASE("a value declared in several roles keeps each declaration") {
  // Loop body: acc_out is an untyped output and a typed value_info entry; the then branch outputs
  // the outer X under a declaration of its own (no type, a doc string); main: X also an output.
  onnx::ModelProto in = control_flow_model([](onnx::ValueInfoProto&, int) {});
  auto* body = in.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_g();
  typed(body->add_value_info(), "acc_out", onnx::TensorProto::FLOAT, {2})->set_doc_string("vi doc");
  auto* then_out = in.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_output(0);
  then_out->set_name("X");
  then_out->set_doc_string("branch view of X");
  in.mutable_graph()->mutable_input(1)->set_doc_string("input X");
  auto* x_out = in.mutable_graph()->add_output();
  x_out->set_name("X");
  x_out->set_doc_string("output X");
  const onnx::ModelProto out = saved(load(in));
  CHECK(differences(in, out) == "");
  CHECK_FALSE(subgraph(out, 1, 0).output(1).has_type());
  CHECK(subgraph(out, 1, 0).value_info(0).type().tensor_type().elem_type() == onnx::TensorProto::FLOAT);
  CHECK_FALSE(subgraph(out, 0, 0).output(0).has_type());
  CHECK(out.graph().output(1).doc_string() == "output X");
}

TEST_CASE("a type set after import wins over the kept declarations; no undefined element type is written") {
  onnx::ModelProto in = control_flow_model([](onnx::ValueInfoProto&, int) {});
  auto* body = in.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_g();
  typed(body->add_value_info(), "acc_out", onnx::TensorProto::FLOAT, {2});
  ir::Model m = load(in);
  ir::Graph* b = m.graph->nodes()[1]->attr_graph("body");
  REQUIRE(b != nullptr);
  ir::Value* acc = b->find_value("acc_out");
  REQUIRE(acc != nullptr);
  acc->dtype = ir::DType::F16;
  ir::Graph* then_branch = m.graph->nodes()[0]->attr_graph("then_branch");
  REQUIRE(then_branch != nullptr);
  then_branch->outputs[0]->has_type = true;  // declared, element type still unknown
  const onnx::ModelProto out = saved(m);
  const auto& ob = subgraph(out, 1, 0);
  CHECK(ob.output(1).type().tensor_type().elem_type() == onnx::TensorProto::FLOAT16);
  CHECK(ob.value_info(0).type().tensor_type().elem_type() == onnx::TensorProto::FLOAT16);
  CHECK_FALSE(subgraph(out, 0, 0).output(0).has_type());
}
