// Control flow: subgraphs run through KernelContext::run_subgraph, so a body sees the values of
// every enclosing scope.
//   If    opsets 1-25: bool condition (one element); outputs may be tensors, sequences or
//         optionals.
//   Loop  opsets 1-25: optional max trip count M (i64) and condition (bool); loop-carried values of
//         any kind (tensors, sequences, optionals); scan outputs stacked along a new axis 0.
//   Scan  opset 8 (batch axis 0, sequence_lens, `directions`) and opsets 9-25
//         (scan_input_axes, scan_input_directions, scan_output_axes, scan_output_directions).
// dtypes: any fixed-size dtype or string (values are moved, not computed). Not supported: scan
// outputs of sub-byte dtypes (int4/float4), since they are stacked bytewise.
#include <algorithm>
#include <limits>
#include <string>

#include "backends/cpu/kernels/control_kernels.h"
#include "backends/cpu/kernels/kernel_util.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;

const ir::Graph& graph_attr(const ir::Node& n, const char* name) {
  const ir::Graph* g = n.attr_graph(name);
  if (!g) throw ModelError(n.describe() + ": missing graph attribute '" + name + "'");
  return *g;
}

bool read_bool(const ir::Node& n, const RValue& v, const char* what) {
  if (v.kind != RValue::Kind::Tensor || v.tensor.numel() != 1)
    throw ModelError(n.describe() + ": " + what + " must be a tensor with one element");
  if (v.tensor.dtype() == DType::Bool) return v.tensor.data<bool>()[0];  // the usual case
  bool out = false;
  ir::dispatch<MCC_ALL_DTYPES>(v.tensor.dtype(), n.describe() + ": " + what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = static_cast<bool>(v.tensor.data<T>()[0]);
  });
  return out;
}

const ir::Tensor& as_tensor(const ir::Node& n, const RValue& v, const std::string& what) {
  if (v.kind != RValue::Kind::Tensor)
    throw ModelError(n.describe() + ": " + what + " must be a tensor");
  return v.tensor;
}

// An empty scan output (zero iterations): [0, dims the body declares (unknown -> 0)...].
ir::Tensor empty_scan_output(const ir::Value* body_out, int64_t axis_pos, int64_t count_dim) {
  std::vector<int64_t> dims;
  if (body_out && body_out->shape.dims)
    for (const auto& d : *body_out->shape.dims) dims.push_back(d.value ? *d.value : 0);
  if (axis_pos < 0 || axis_pos > static_cast<int64_t>(dims.size())) axis_pos = 0;
  dims.insert(dims.begin() + axis_pos, count_dim);
  const DType dt = body_out && body_out->dtype != DType::Undefined ? body_out->dtype : DType::F32;
  return ir::Tensor::allocate(dt, dims);
}

// ---------------------------------------------------------------- If

Kernel make_if(const ir::Node& node) {
  const ir::Graph* then_g = &graph_attr(node, "then_branch");
  const ir::Graph* else_g = &graph_attr(node, "else_branch");
  return [then_g, else_g](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const RValue* c = ctx.in_value(0);
    if (!c) throw ModelError(n.describe() + ": the condition is missing");
    const ir::Graph& g = read_bool(n, *c, "the condition") ? *then_g : *else_g;
    std::vector<RValue> outs = ctx.run_subgraph(g, {});
    if (outs.size() < ctx.num_outputs())
      throw ModelError(n.describe() + ": branch '" + g.name + "' has " + std::to_string(outs.size()) +
                       " outputs, the node has " + std::to_string(ctx.num_outputs()));
    for (size_t i = 0; i < ctx.num_outputs(); ++i)
      if (ctx.wants_output(i)) ctx.set_output_value(i, std::move(outs[i]));
  };
}

// ---------------------------------------------------------------- Loop

Kernel make_loop(const ir::Node& node) {
  const ir::Graph* body = &graph_attr(node, "body");
  const size_t n_carried = node.inputs.size() >= 2 ? node.inputs.size() - 2 : 0;
  if (node.inputs.size() < 2)
    throw ModelError(node.describe() + ": Loop takes M, cond and the loop-carried values (use \"\" for absent ones)");
  if (body->inputs.size() != n_carried + 2)
    throw ModelError(node.describe() + ": the body takes " + std::to_string(body->inputs.size()) +
                     " inputs, expected 2 + " + std::to_string(n_carried) + " loop-carried values");
  if (body->outputs.size() < n_carried + 1)
    throw ModelError(node.describe() + ": the body must return cond and " + std::to_string(n_carried) +
                     " loop-carried values");
  const size_t n_scan = body->outputs.size() - 1 - n_carried;
  if (node.outputs.size() > n_carried + n_scan)
    throw ModelError(node.describe() + ": more outputs than loop-carried values and scan outputs");
  return [body, n_carried, n_scan](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    int64_t max_trip = std::numeric_limits<int64_t>::max();
    if (ctx.has_input(0)) {
      const ir::Tensor& m = ctx.in(0);
      if (m.numel() != 1) throw ModelError(n.describe() + ": M must have one element");
      max_trip = read_int_tensor(n, m, "M")[0];
    }
    bool cond = true;
    if (ctx.has_input(1)) cond = read_bool(n, *ctx.in_value(1), "cond");
    std::vector<RValue> carried;
    carried.reserve(n_carried);
    for (size_t i = 0; i < n_carried; ++i) {
      const RValue* v = ctx.in_value(2 + i);
      carried.push_back(v ? *v : RValue::none());
    }
    std::vector<std::vector<ir::Tensor>> scans(n_scan);
    int64_t it = 0;
    for (; it < max_trip && cond; ++it) {
      std::vector<RValue> in;
      in.reserve(2 + n_carried);
      in.push_back(RValue::of(ir::Tensor::scalar<int64_t>(it)));
      in.push_back(RValue::of(bool_scalar(cond)));
      for (RValue& v : carried) in.push_back(std::move(v));
      std::vector<RValue> outs = ctx.run_subgraph(*body, std::move(in));
      cond = read_bool(n, outs[0], "the body's condition output");
      for (size_t i = 0; i < n_carried; ++i) carried[i] = std::move(outs[1 + i]);
      for (size_t k = 0; k < n_scan; ++k)
        scans[k].push_back(as_tensor(n, outs[1 + n_carried + k], "scan output " + std::to_string(k)));
    }
    for (size_t i = 0; i < n_carried && i < ctx.num_outputs(); ++i)
      if (ctx.wants_output(i)) ctx.set_output_value(i, std::move(carried[i]));
    for (size_t k = 0; k < n_scan && n_carried + k < ctx.num_outputs(); ++k) {
      if (!ctx.wants_output(n_carried + k)) continue;
      ir::Tensor t = scans[k].empty() ? empty_scan_output(body->outputs[1 + n_carried + k], 0, 0)
                                      : stack_tensors(n, scans[k], 0);
      ctx.set_output(n_carried + k, std::move(t));
    }
  };
}

// ---------------------------------------------------------------- Scan (opset 9+)

std::vector<int64_t> ints_or_zeros(const ir::Node& n, const char* name, size_t count) {
  std::vector<int64_t> v = n.attr_ints(name, std::vector<int64_t>(count, 0));
  if (v.size() != count)
    throw ModelError(n.describe() + ": attribute '" + name + "' has " + std::to_string(v.size()) +
                     " entries, expected " + std::to_string(count));
  return v;
}

Kernel make_scan9(const ir::Node& node) {
  const ir::Graph* body = &graph_attr(node, "body");
  const int64_t m = node.attr_int("num_scan_inputs", -1);
  const int64_t n_in = static_cast<int64_t>(node.inputs.size());
  if (m < 1 || m > n_in) throw ModelError(node.describe() + ": num_scan_inputs must be in [1, number of inputs]");
  const size_t n_state = static_cast<size_t>(n_in - m);
  if (body->inputs.size() != static_cast<size_t>(n_in))
    throw ModelError(node.describe() + ": the body takes " + std::to_string(body->inputs.size()) + " inputs, the node has " +
                     std::to_string(n_in));
  if (body->outputs.size() < n_state)
    throw ModelError(node.describe() + ": the body returns fewer values than there are states");
  const size_t n_scan_out = body->outputs.size() - n_state;
  const auto in_axes = ints_or_zeros(node, "scan_input_axes", static_cast<size_t>(m));
  const auto in_dirs = ints_or_zeros(node, "scan_input_directions", static_cast<size_t>(m));
  const auto out_axes = ints_or_zeros(node, "scan_output_axes", n_scan_out);
  const auto out_dirs = ints_or_zeros(node, "scan_output_directions", n_scan_out);
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    std::vector<RValue> state;
    for (size_t i = 0; i < n_state; ++i) state.push_back(RValue::of(ctx.in(i)));
    int64_t seq = -1;
    std::vector<int64_t> axes(static_cast<size_t>(m));
    for (int64_t j = 0; j < m; ++j) {
      const ir::Tensor& x = ctx.in(n_state + j);
      axes[j] = normalize_axis(n, in_axes[j], static_cast<int64_t>(x.rank()));
      const int64_t len = x.dims()[axes[j]];
      if (seq >= 0 && len != seq)
        throw ModelError(n.describe() + ": scan inputs have different sequence lengths (" + std::to_string(seq) +
                         " and " + std::to_string(len) + ")");
      seq = len;
    }
    std::vector<std::vector<ir::Tensor>> outs(n_scan_out);
    for (int64_t t = 0; t < seq; ++t) {
      std::vector<RValue> in = state;
      for (int64_t j = 0; j < m; ++j) {
        const int64_t idx = in_dirs[j] ? seq - 1 - t : t;
        in.push_back(RValue::of(slice_axis(n, ctx.in(n_state + j), axes[j], idx, 1, false)));
      }
      std::vector<RValue> res = ctx.run_subgraph(*body, std::move(in));
      for (size_t i = 0; i < n_state; ++i) state[i] = std::move(res[i]);
      for (size_t k = 0; k < n_scan_out; ++k)
        outs[k].push_back(as_tensor(n, res[n_state + k], "scan output " + std::to_string(k)));
    }
    for (size_t i = 0; i < n_state; ++i)
      if (ctx.wants_output(i)) ctx.set_output_value(i, std::move(state[i]));
    for (size_t k = 0; k < n_scan_out; ++k) {
      if (!ctx.wants_output(n_state + k)) continue;
      if (outs[k].empty()) {
        ctx.set_output(n_state + k, empty_scan_output(body->outputs[n_state + k], out_axes[k], 0));
        continue;
      }
      if (out_dirs[k]) std::reverse(outs[k].begin(), outs[k].end());
      ctx.set_output(n_state + k, stack_tensors(n, outs[k], out_axes[k]));
    }
  };
}

// ---------------------------------------------------------------- Scan (opset 8)

Kernel make_scan8(const ir::Node& node) {
  const ir::Graph* body = &graph_attr(node, "body");
  const int64_t m = node.attr_int("num_scan_inputs", -1);
  const int64_t n_in = static_cast<int64_t>(node.inputs.size()) - 1;  // without sequence_lens
  if (m < 1 || m > n_in) throw ModelError(node.describe() + ": num_scan_inputs must be in [1, number of inputs - 1]");
  const size_t n_state = static_cast<size_t>(n_in - m);
  if (body->inputs.size() != static_cast<size_t>(n_in))
    throw ModelError(node.describe() + ": the body takes " + std::to_string(body->inputs.size()) +
                     " inputs, expected " + std::to_string(n_in));
  if (body->outputs.size() < n_state)
    throw ModelError(node.describe() + ": the body returns fewer values than there are states");
  const size_t n_scan_out = body->outputs.size() - n_state;
  const auto dirs = ints_or_zeros(node, "directions", static_cast<size_t>(m));
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x0 = ctx.in(1 + n_state);
    if (x0.rank() < 2) throw ModelError(n.describe() + ": scan inputs must be [batch, sequence, ...]");
    const int64_t batch = x0.dims()[0], seq = x0.dims()[1];
    for (int64_t j = 0; j < m; ++j) {
      const ir::Tensor& x = ctx.in(1 + n_state + j);
      if (x.rank() < 2 || x.dims()[0] != batch || x.dims()[1] != seq)
        throw ModelError(n.describe() + ": scan inputs must share [batch, sequence] dims");
    }
    for (size_t i = 0; i < n_state; ++i)
      if (ctx.in(1 + i).rank() < 1 || ctx.in(1 + i).dims()[0] != batch)
        throw ModelError(n.describe() + ": states must have the batch size as their first dim");
    std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
    if (ctx.has_input(0)) {
      lens = read_int_tensor(n, ctx.in(0), "sequence_lens");
      if (static_cast<int64_t>(lens.size()) != batch) throw ModelError(n.describe() + ": sequence_lens must have batch entries");
      for (int64_t l : lens)
        if (l < 0 || l > seq) throw ModelError(n.describe() + ": sequence_lens value out of range");
    }
    std::vector<std::vector<ir::Tensor>> final_state(n_state), scan_out(n_scan_out);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<RValue> state;
      for (size_t i = 0; i < n_state; ++i) state.push_back(RValue::of(slice_axis(n, ctx.in(1 + i), 0, b, 1, false)));
      std::vector<std::vector<ir::Tensor>> steps(n_scan_out);
      std::vector<ir::Tensor> xb;
      for (int64_t j = 0; j < m; ++j) xb.push_back(slice_axis(n, ctx.in(1 + n_state + j), 0, b, 1, false));
      for (int64_t t = 0; t < lens[b]; ++t) {
        std::vector<RValue> in = state;
        for (int64_t j = 0; j < m; ++j)
          in.push_back(RValue::of(slice_axis(n, xb[j], 0, dirs[j] ? lens[b] - 1 - t : t, 1, false)));
        std::vector<RValue> res = ctx.run_subgraph(*body, std::move(in));
        for (size_t i = 0; i < n_state; ++i) state[i] = std::move(res[i]);
        for (size_t k = 0; k < n_scan_out; ++k) steps[k].push_back(as_tensor(n, res[n_state + k], "scan output"));
      }
      for (size_t i = 0; i < n_state; ++i) final_state[i].push_back(as_tensor(n, state[i], "state"));
      for (size_t k = 0; k < n_scan_out; ++k) {
        // Steps past this batch entry's length are zero (padding up to the full sequence).
        if (steps[k].empty()) {
          if (seq == 0) { scan_out[k].push_back(empty_scan_output(body->outputs[n_state + k], 0, 0)); continue; }
          throw UnsupportedError(n.describe() + ": a zero sequence length in a batch is not supported");
        }
        while (static_cast<int64_t>(steps[k].size()) < seq)
          steps[k].push_back(ir::Tensor::allocate(steps[k][0].dtype(), steps[k][0].dims()));
        scan_out[k].push_back(stack_tensors(n, steps[k], 0));
      }
    }
    for (size_t i = 0; i < n_state; ++i)
      if (ctx.wants_output(i)) ctx.set_output(i, stack_tensors(n, final_state[i], 0));
    for (size_t k = 0; k < n_scan_out; ++k)
      if (ctx.wants_output(n_state + k)) ctx.set_output(n_state + k, stack_tensors(n, scan_out[k], 0));
  };
}

}  // namespace

void register_control_flow(KernelRegistry& r) {
  r.add("If", 1, 0, make_if);
  r.add("Loop", 1, 0, make_loop);
  r.add("Scan", 8, 8, make_scan8);
  r.add("Scan", 9, 0, make_scan9);
}

}  // namespace mcc::backends::cpu
