// Every op the cpu backend registers (ai.onnx domain) has a decision in each place that decides
// per op: the fp16 policy classes (or the deliberately-unclassified list, or a schema with no
// float data at all), the quantize policy for ops that carry weights (quantized, or not with a
// reason), and ir/op_facts (an entry, and a shape rule where it claims one). A new kernel with
// no decision fails here, naming what is missing; the second case shows that failure on a
// made-up op. Ops of other domains are out of scope: the policy lists and op facts are ai.onnx
// only, and the stages treat other ops as unlisted.
#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/kernels/kernels.h"
#include "ir/op_facts.h"
#include "ir/op_schema.h"
#include "ir/shape_inference/shape_inference.h"
#include "transforms/common/opset_rewrites.h"
#include "transforms/fp16/op_policy.h"
#include "transforms/quantize/policy.h"

using namespace mcc;

namespace {

struct Unclassified {
  std::string op;
  std::vector<std::string> missing;  // one line per place that has no decision
};

/// True when the newest schema of `op` has no slot that may hold float32: the fp16 stage never
/// finds float data on such a node, so it needs no class.
bool schema_without_float(const std::string& op) {
  const ir::OpTypeInfo* t = ir::op_type_info(op, "", ir::max_known_opset(""));
  if (!t) return false;
  for (const auto* slots : {&t->inputs, &t->outputs})
    for (const ir::SlotTypes& s : *slots)
      if (s.allows_f32) return false;
  return true;
}

std::vector<std::string> fp16_missing(const std::string& op) {
  namespace f = transforms::fp16;
  int classes = 0;
  for (const f::OpSet* s : {&f::fp16_ops(), &f::fp32_ops(), &f::widest_ops(), &f::control_flow_ops()})
    classes += static_cast<int>(s->count(op));
  const bool deliberate = f::deliberately_unclassified().count(op) != 0;
  if (classes > 1) return {"fp16: in more than one class"};
  if (classes == 1 && deliberate) return {"fp16: classified and also deliberately unclassified"};
  if (classes == 0 && !deliberate && !schema_without_float(op))
    return {"fp16: in no class (fp16_ops, fp32_ops, widest_ops, control_flow_ops) and not in "
            "deliberately_unclassified() with a reason"};
  return {};
}

std::vector<std::string> quantize_missing(const std::string& op, const ir::OpFacts* facts) {
  namespace q = transforms::quantize;
  const bool supported = q::supported_ops().count(op) != 0, skipped = q::not_quantized().count(op) != 0;
  if (supported && skipped) return {"quantize: in supported_ops() and in not_quantized()"};
  if (!facts) return {"quantize: no op facts to tell whether it carries weights"};
  if (facts->weights && !supported && !skipped)
    return {"quantize: carries weights but is neither in supported_ops() nor in not_quantized() "
            "with a reason"};
  return {};
}

std::vector<std::string> facts_missing(const std::string& op, const ir::OpFacts* facts) {
  if (!facts) return {"op_facts: no entry in ir/op_facts.cpp (shape kind, channels, weights)"};
  if ((facts->shape == ir::ShapeKind::Own) != ir::has_own_shape_rule(op))
    return {"op_facts: shape kind Own must match a rule of its own in ir/shape_inference"};
  return {};
}

/// The ops of `ops` (ai.onnx op types) that some place has no decision for, with what is missing.
std::vector<Unclassified> unclassified_ops(const std::vector<std::string>& ops) {
  std::vector<Unclassified> out;
  for (const std::string& op : ops) {
    const ir::OpFacts* facts = ir::op_facts(op);
    Unclassified u{op, {}};
    for (auto part : {fp16_missing(op), quantize_missing(op, facts), facts_missing(op, facts)})
      u.missing.insert(u.missing.end(), part.begin(), part.end());
    if (!u.missing.empty()) out.push_back(std::move(u));
  }
  return out;
}

std::string describe(const std::vector<Unclassified>& list) {
  std::ostringstream s;
  for (const auto& u : list)
    for (const auto& m : u.missing) s << "  " << u.op << ": " << m << "\n";
  return s.str();
}

/// Ai.onnx op types with a kernel in `r`, sorted, once each.
std::vector<std::string> onnx_ops(const backends::KernelRegistry& r) {
  std::set<std::string> ops;
  for (const auto& [domain, op, since_min, since_max] : r.list())
    if (domain.empty() || domain == "ai.onnx") ops.insert(op);
  return {ops.begin(), ops.end()};
}

/// The cpu backend's registry, filled by the one list the backend itself uses.
backends::KernelRegistry cpu_registry() {
  backends::KernelRegistry r;
  backends::cpu::register_all(r);
  return r;
}

}  // namespace

TEST_CASE("every op with a cpu kernel is classified by fp16, quantize and op_facts") {
  const std::vector<std::string> ops = onnx_ops(cpu_registry());
  REQUIRE(ops.size() > 150);
  const auto missing = unclassified_ops(ops);
  INFO("ops without a decision:\n" << describe(missing));
  CHECK(missing.empty());
}

TEST_CASE("the classification check reports an op nobody decided on") {
  backends::KernelRegistry fake;
  const backends::KernelFactory none;
  fake.add("Relu", 1, 0, none);
  fake.add("FrobnicateV2", 1, 0, none);
  const auto missing = unclassified_ops(onnx_ops(fake));
  MESSAGE("what a new kernel without decisions looks like:\n" << describe(missing));
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].op == "FrobnicateV2");
  REQUIRE(missing[0].missing.size() == 3);
  CHECK(missing[0].missing[0].rfind("fp16:", 0) == 0);
  CHECK(missing[0].missing[1].rfind("quantize:", 0) == 0);
  CHECK(missing[0].missing[2].rfind("op_facts:", 0) == 0);
}

TEST_CASE("the classification check reports an op with weights that quantize did not decide on") {
  // Conv carries weights and is quantized; a weighted op missing from both quantize lists is
  // reported (checked on the real lists: every weighted op has a decision).
  for (const ir::OpFacts& f : ir::all_op_facts()) {
    if (!f.weights) continue;
    const bool decided = transforms::quantize::supported_ops().count(f.op) ||
                         transforms::quantize::not_quantized().count(f.op);
    CHECK_MESSAGE(decided, std::string(f.op) << " carries weights but quantize has no decision");
  }
  CHECK(quantize_missing("Conv", ir::op_facts("Conv")).empty());
  ir::OpFacts weighted{"FrobnicateV2"};
  weighted.weights = true;
  CHECK(quantize_missing("FrobnicateV2", &weighted).size() == 1);
}

TEST_CASE("op_facts: shape kinds agree with ir/shape_inference's own rules") {
  for (const ir::OpFacts& f : ir::all_op_facts())
    CHECK_MESSAGE((f.shape == ir::ShapeKind::Own) == ir::has_own_shape_rule(f.op),
                  std::string(f.op) << ": shape kind and shape rule disagree");
}

TEST_CASE("op_facts: the facts the stages used to keep in private lists") {
  CHECK(ir::shape_kind("Gelu") == ir::ShapeKind::Same);
  CHECK(ir::shape_kind("Swish") == ir::ShapeKind::Same);
  CHECK(ir::shape_kind("Equal") == ir::ShapeKind::BroadcastBool);
  CHECK(ir::shape_kind("ReduceMean") == ir::ShapeKind::Reduce);
  CHECK(ir::passes_channels_through("Relu"));
  CHECK(ir::passes_channels_through("Swish"));
  CHECK_FALSE(ir::passes_channels_through("Softmax"));
  CHECK(ir::raise_compatible_from("Clip") == 1);      // Clip-6's bounds become inputs at 11
  CHECK(ir::raise_compatible_from("Upsample") == 7);  // through Upsample-9 and Resize-10
  CHECK(ir::raise_compatible_from("Conv") == 1);
  CHECK(ir::raise_compatible_from("Softmax") == 1);   // node by node: refused where the axis is not single
  CHECK_FALSE(ir::raise_compatible_from("Attention"));
  CHECK(ir::changed_meaning_after_13("ReduceMean") == 18);
  CHECK_FALSE(ir::changed_meaning_after_13("ReduceSum"));
  CHECK(ir::op_facts("FrobnicateV2") == nullptr);
}

TEST_CASE("op_facts: every rewritten meaning change is a schema change of the ONNX registry") {
  // The registry (libonnx) knows ai.onnx up to max_known_opset; a change past it is checked
  // against the after13 column instead.
  const int64_t known = ir::max_known_opset("");
  for (const ir::RaiseRewrite& r : ir::all_raise_rewrites()) {
    INFO(std::string(r.op) << " at " << r.at << " from " << r.oldest);
    CHECK(r.oldest < r.at);
    CHECK(transforms::raise_step(r.op, r.at) != nullptr);  // written by common/opset_rewrites
    if (r.at <= known) {
      const ir::OpTypeInfo* at = ir::op_type_info(r.op, "", r.at);
      const ir::OpTypeInfo* before = ir::op_type_info(r.op, "", r.at - 1);
      REQUIRE(at != nullptr);
      REQUIRE(before != nullptr);
      CHECK(at->since_version == r.at);  // a new schema at `at`
      CHECK(before->since_version >= r.oldest);  // the versions the rewrite takes end just before it
      const ir::OpTypeInfo* oldest = ir::op_type_info(r.op, "", r.oldest);
      REQUIRE(oldest != nullptr);
      CHECK(oldest->since_version == r.oldest);
    } else {
      CHECK(ir::changed_meaning_after_13(r.op) == r.at);
    }
    if (!r.becomes.empty()) {
      const ir::OpTypeInfo* next = ir::op_type_info(r.becomes, "", r.at);
      REQUIRE(next != nullptr);
      CHECK(next->since_version == r.at);  // the new op has a schema of its own at `at`
    }
    // The op's rewrites chain down to its raise fact: raise_compatible_from counts this row.
    const auto from = ir::raise_compatible_from(r.op);
    REQUIRE(from.has_value());
    CHECK(*from <= r.oldest);
  }
  // Each step has its row.
  for (const auto steps : {transforms::input_rewrite_steps(), transforms::op_rewrite_steps()})
    for (const transforms::RaiseStep& s : steps) {
      bool listed = false;
      for (const ir::RaiseRewrite& r : ir::raise_rewrites(s.op)) listed = listed || r.at == s.at;
      CHECK_MESSAGE(listed, std::string(s.op) << "-" << s.at << " has a rewrite step but no op-facts row");
    }
}
