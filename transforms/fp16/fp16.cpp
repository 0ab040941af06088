// fp16: mixed-precision conversion of float32 compute to float16 (or bfloat16 with dtype=bf16),
// with the semantics of MXNet AMP (convert_model with cast_params_offline=True).
//
// Before:  Y = Softmax(Relu(Conv(X, W, B)))                        all float32
// After:   Xh = Cast<f16>(X); C = Conv(Xh, Wh, Bh); R = Relu(C);   Wh, Bh stored as float16
//          Y = Softmax(Cast<f32>(R))                               X, Y keep float32 (keep_io)
//
// Each node with float32 data is decided once (fp16/plan.cpp): converted ops (Conv, MatMul,
// Gemm, ...), ops kept in float32 (Exp, Softmax, reductions, normalizations, ...), conditional
// float32 ops (an attribute value keeps them in float32), widest-type ops (run in float32 if any
// dynamic input is float32), excluded nodes, and unlisted ops (float32 unless unlisted=widest).
// The lists are in op_policy.cpp; which inputs are float data comes from the ONNX schemas
// (Resize `scales` stays float32). Casts appear only where a value crosses a type boundary, one
// per value and type; weights are converted offline (fp16/apply.cpp).
//
// Numerics: float16 has an 11-bit significand and a largest finite value of 65504; bfloat16 an
// 8-bit significand with float32's range. A constant whose finite values would overflow the low
// type is never clamped silently. out_of_range= decides what happens to it:
//   - clamp_masks (default): a mask fill (every overflowing value is one number of magnitude
//     >= 1e6, e.g. -3.4e38 or -1e9 as an attention-mask fill; plan.h is_mask_fill) is clamped to
//     the low type's largest finite value (-65504 / 65504 for fp16); any other overflowing
//     constant keeps its consumers in float32. Why the default: such a fill stands for -inf ahead
//     of a softmax (or max), and -65504 does the same job (exp underflows to 0 either way), while
//     keeping it fp32 keeps every layer's attention scores fp32 behind two Casts. Caveat: in fp16,
//     -65504 plus a score below -16 rounds to -inf, so a row masked entirely whose scores are all
//     below -16 gives NaN after the softmax where float32 gave a uniform row; out_of_range=
//     keep_fp32 avoids that.
//   - keep_fp32: every node reading an overflowing constant stays in float32 (reason out_of_range).
//   - saturate: every overflowing constant is clamped.
// Every constant is reported in the record's out_of_range list (count, largest magnitude, action);
// every clamp in the record's clamped list (tensor, count, from, to), in stats (values_saturated,
// constants_clamped) and as a warning, on replay too. Nonzero values that round to zero are
// counted (values_flushed_to_zero). Activations that overflow at run time are not detectable
// here; keep such ops in fp32 with fp32_ops= or exclude=.
//
// Embedding tables: with convert_embeddings=true (default) a Gather/GatherElements/GatherND that
// reads a float32 constant with run-time indices converts: the table is stored in the low type
// (halving the largest tensor of most language models) and the gathered rows flow low, with a
// Cast back to float32 where their consumer stays float32 (LayerNormalization). Accuracy: a
// table entry rounds like any weight (relative 2^-11 in fp16).
//
// Does not apply when: the model has no float32 compute; nodes of ops without an ONNX schema in
// the linked libonnx (opset > 17 additions, custom domains) stay float32 and are reported;
// If/Loop/Scan nodes keep their interface types and their bodies are converted on their own with
// the bodies' inputs/outputs as declared. bfloat16 Casts need opset >= 13, and many ops allow
// bfloat16 only from opset 13/14 on (Conv only from opset 22, beyond libonnx 1.12), so bf16
// converts fewer nodes than fp16 on older models.
//
// Options: exclude= items match a node name, any of its output names or its op type exactly, or,
// as an ECMAScript regex, the whole node or output name (common/node_filter.h); a bad regex or an
// item that matches no node with float32 data is a usage error (exit 2) naming the closest node.
// conditional_fp32= items are Op:attribute:value1|value2 and add to the defaults. Replay: with a
// record from a state, the recorded per-node decisions are applied as they are, so later changes
// of the default lists do not change a replayed model.
#include "transforms/fp16/fp16.h"

#include <spdlog/spdlog.h>

#include <set>

#include "ir/errors.h"
#include "ir/op_schema.h"
#include "transforms/fp16/plan.h"
#include "transforms/pipeline/pass_registry.h"

namespace mcc::transforms::fp16 {

namespace {

using fp16::Config;

std::string low_name(ir::DType d) { return d == ir::DType::BF16 ? "bf16" : "f16"; }

void check_ops(const std::vector<std::string>& ops, const std::string& option) {
  const auto& known = ir::known_onnx_op_names();
  for (const auto& op : ops)
    if (!std::binary_search(known.begin(), known.end(), op) && !fp16::fp16_ops().count(op) &&
        !fp16::fp32_ops().count(op) && !fp16::widest_ops().count(op))
      throw UsageError("fp16: " + option + ": unknown op '" + op + "'" + did_you_mean(op, known));
}

Config make_config(const Options& o) {
  Config c;
  c.low = o.get_string("dtype") == "bf16" ? ir::DType::BF16 : ir::DType::F16;
  c.keep_io = o.get_bool("keep_io");
  const auto f32 = o.get_list("fp32_ops"), f16 = o.get_list("fp16_ops"), wide = o.get_list("widest_ops");
  check_ops(f32, "fp32_ops");
  check_ops(f16, "fp16_ops");
  check_ops(wide, "widest_ops");
  c.user_fp32_ops.insert(f32.begin(), f32.end());
  c.user_fp16_ops.insert(f16.begin(), f16.end());
  c.user_widest_ops.insert(wide.begin(), wide.end());
  for (const auto& op : c.user_fp32_ops)
    if (c.user_fp16_ops.count(op) || c.user_widest_ops.count(op))
      throw UsageError("fp16: op '" + op + "' is listed in fp32_ops and in " +
                       (c.user_fp16_ops.count(op) ? "fp16_ops" : "widest_ops") + "; keep it in one list");
  for (const auto& op : c.user_fp16_ops)
    if (c.user_widest_ops.count(op))
      throw UsageError("fp16: op '" + op + "' is listed in fp16_ops and in widest_ops; keep it in one list");
  c.conditional = fp16::conditional_fp32_rules();
  for (const auto& text : o.get_list("conditional_fp32")) {
    auto rule = fp16::ConditionalRule::parse(text);
    check_ops({rule.op}, "conditional_fp32");
    c.conditional.push_back(std::move(rule));
  }
  c.exclude = NodeFilter("fp16", "exclude", o.get_list("exclude"));
  const std::string oor = o.get_string("out_of_range");
  c.out_of_range = oor == "saturate"    ? fp16::OutOfRange::Saturate
                   : oor == "keep_fp32" ? fp16::OutOfRange::KeepFp32
                                        : fp16::OutOfRange::ClampMasks;
  c.convert_embeddings = o.get_bool("convert_embeddings");
  c.unlisted = o.get_string("unlisted") == "widest" ? fp16::Unlisted::Widest : fp16::Unlisted::Fp32;
  return c;
}

fp16::Replay read_replay(const nlohmann::ordered_json& rec) {
  fp16::Replay r;
  try {
    if (!rec.contains("nodes")) throw ModelError("no 'nodes' list");
    for (const auto& e : rec.at("nodes")) {
      fp16::ReplayEntry x;
      x.op = e.at("op").get<std::string>();
      x.name = e.value("node", std::string());
      const std::string dt = e.at("dtype").get<std::string>();
      if (dt != "f16" && dt != "bf16" && dt != "f32") throw ModelError("bad dtype '" + dt + "'");
      x.low = dt != "f32";
      x.reason = e.value("reason", std::string());
      x.detail = e.value("detail", std::string());
      const auto key = std::make_pair(e.value("graph", std::string()), e.at("index").get<int>());
      if (!r.emplace(key, std::move(x)).second) throw ModelError("node #" + std::to_string(key.second) + " recorded twice");
    }
  } catch (const ModelError& e) {
    throw ModelError("fp16: the state's record is invalid: " + e.message());
  } catch (const nlohmann::json::exception& e) {
    throw ModelError(std::string("fp16: the state's record is invalid: ") + e.what());
  }
  return r;
}

std::vector<std::string> all_node_names(const ir::Graph& g) {
  std::vector<std::string> out;
  ir::for_each_graph(const_cast<ir::Graph&>(g), [&](ir::Graph& sg) {
    for (const ir::Node* n : sg.nodes()) {
      if (!n->name.empty()) out.push_back(n->name);
      for (const ir::Value* v : n->outputs)
        if (v) out.push_back(v->name);
    }
  });
  return out;
}

class Fp16Pass : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo kInfo{
        "fp16",
        "Mixed precision: convert float32 compute to float16 (or bfloat16), MXNet AMP semantics",
        {
            {"dtype", OptionType::String, "fp16", "Low-precision type", {"fp16", "bf16"}},
            {"keep_io", OptionType::Bool, "true", "Keep graph inputs/outputs in their dtype (Casts at the boundary)", {}},
            {"fp32_ops", OptionType::StringList, "", "Ops kept in float32, in addition to the defaults", {}},
            {"fp16_ops", OptionType::StringList, "", "Ops converted, in addition to the defaults (wins over them)", {}},
            {"widest_ops", OptionType::StringList, "", "Ops that run in the widest type of their inputs", {}},
            {"conditional_fp32", OptionType::StringList, "",
             "More conditional float32 rules, Op:attribute:value1|value2", {}},
            {"exclude", OptionType::StringList, "", "Nodes kept in float32: names, output names, op types or regexes", {}},
            {"out_of_range", OptionType::String, "clamp_masks",
             "Constants that overflow the low type: clamp mask fills (one value, |x| >= 1e6) and keep the "
             "others' consumers in float32; keep all in float32; or clamp all",
             {"clamp_masks", "keep_fp32", "saturate"}, "keep_fp32"},
            {"convert_embeddings", OptionType::Bool, "true",
             "Gathers from a float32 constant table with run-time indices (embeddings) run in the low type",
             {}, "false"},
            {"unlisted", OptionType::String, "fp32", "Ops in no list: keep in float32, or treat as widest",
             {"fp32", "widest"}},
        },
        {{"quantize", "a QDQ model keeps float32 scales and dequantized values by its own contract; fp16 and quantize are alternatives"}}};
    return kInfo;
  }

  PassResult run(ir::Model& model, PassContext& ctx) override {
    Config cfg = make_config(ctx.options);
    cfg.initializer_inputs_are_constants = model.ir_version > 0 && model.ir_version < 4;
    const int64_t opset = model.opset("");
    if (cfg.low == ir::DType::BF16) {
      const ir::OpTypeInfo* cast = ir::op_type_info("Cast", "", opset);
      if (!cast || cast->outputs.empty() || !cast->outputs[0].allows_bf16)
        throw UnsupportedError("fp16{dtype=bf16}: bfloat16 needs ai.onnx opset >= 13 (Cast to bfloat16); the model "
                               "imports opset " + std::to_string(opset) + "; convert the model to a newer opset first");
    }
    std::optional<fp16::Replay> replay;
    if (ctx.replay && !ctx.replay->empty()) replay = read_replay(*ctx.replay);

    fp16::Plan plan = fp16::make_plan(model, cfg, replay ? &*replay : nullptr);
    if (!replay) cfg.exclude.require_all_matched("node with float32 data", all_node_names(*model.graph));
    const fp16::ApplyStats st = fp16::apply_plan(model, plan, cfg);

    PassResult res;
    int64_t low = 0, kept = 0, overflow = 0, underflow = 0;
    nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
    for (const auto& d : plan.decisions) {
      (d.low ? low : kept)++;
      nlohmann::ordered_json e;
      if (!d.graph.empty()) e["graph"] = d.graph;
      e["index"] = d.index;
      e["node"] = d.node->name;
      e["op"] = d.node->op_type;
      e["dtype"] = d.low ? low_name(cfg.low) : "f32";
      e["reason"] = d.reason;
      if (!d.detail.empty()) e["detail"] = d.detail;
      nodes.push_back(std::move(e));
    }
    nlohmann::ordered_json ranges = nlohmann::ordered_json::array();
    for (const auto& r : plan.ranges) {
      overflow += r.overflow;
      underflow += r.underflow;
      if (r.overflow == 0 && r.underflow == 0) continue;
      nlohmann::ordered_json e;
      e["value"] = r.value;
      e["overflow"] = r.overflow;
      e["underflow"] = r.underflow;
      e["max_abs"] = r.max_abs;
      if (!r.action.empty()) e["action"] = r.action;
      ranges.push_back(std::move(e));
      if (r.overflow > 0 && r.action != "saturated" && r.action != "clamped")
        spdlog::warn("fp16: constant '{}' has {} values beyond the {} range (max |x| = {}); its consumers stay float32",
                     r.value, r.overflow, low_name(cfg.low), r.max_abs);
    }
    // Clamps are counted by the rewrite itself, so a replay (no range checks) reports them too.
    nlohmann::ordered_json clamped = nlohmann::ordered_json::array();
    std::set<std::string> clamped_tensors;
    for (const auto& c : st.clamped) {
      clamped.push_back({{"tensor", c.tensor}, {"count", c.count}, {"from", c.from}, {"to", c.to}});
      clamped_tensors.insert(c.tensor);
      spdlog::warn("fp16: constant '{}': {} values clamped from {} to {} ({} range; out_of_range={})", c.tensor,
                   c.count, c.from, c.to, low_name(cfg.low), ctx.options.get_string("out_of_range"));
    }
    for (const auto& [op, n] : plan.unsupported_ops)
      spdlog::info("fp16: {} node(s) of op {} have no ONNX schema here and stay float32", n, op);

    res.stats["nodes_low"] = low;
    res.stats["nodes_fp32"] = kept;
    res.stats["casts_inserted"] = st.casts;
    res.stats["initializers_converted"] = st.initializers_converted;
    res.stats["initializers_copied"] = st.initializers_copied;
    res.stats["values_out_of_range"] = overflow;
    res.stats["values_saturated"] = st.values_saturated;
    res.stats["constants_clamped"] = static_cast<int64_t>(clamped_tensors.size());
    res.stats["values_flushed_to_zero"] = underflow;
    res.stats["io_retyped"] = st.io_retyped;
    int64_t unsupported = 0;
    for (const auto& [op, n] : plan.unsupported_ops) unsupported += n;
    res.stats["unsupported_nodes"] = unsupported;
    res.stats["newer_opset_nodes"] = plan.newer_opset_nodes;

    res.record["dtype"] = low_name(cfg.low);
    res.record["nodes"] = std::move(nodes);
    res.record["out_of_range"] = std::move(ranges);
    res.record["clamped"] = std::move(clamped);
    nlohmann::ordered_json unsup = nlohmann::ordered_json::object();
    for (const auto& [op, n] : plan.unsupported_ops) unsup[op] = n;
    res.record["unsupported_ops"] = std::move(unsup);
    if (!replay) {
      nlohmann::ordered_json ex = nlohmann::ordered_json::object();
      for (const auto& r : cfg.exclude) ex[r.text] = static_cast<int64_t>(r.matched.size());
      res.record["exclude_matches"] = std::move(ex);
    } else if (ctx.replay->contains("exclude_matches")) {
      // Rules are not re-matched on replay (the decisions are recorded per node); carry what
      // they matched so a replayed state equals the original one.
      res.record["exclude_matches"] = (*ctx.replay)["exclude_matches"];
    }
    res.modified = low > 0 || st.casts > 0 || st.initializers_converted > 0 || st.initializers_copied > 0 ||
                   st.io_retyped > 0;
    return res;
  }
};

}  // namespace

std::unique_ptr<Pass> make_pass() { return std::make_unique<Fp16Pass>(); }

}  // namespace mcc::transforms::fp16
