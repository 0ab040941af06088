// Tensor sequences (runtime values of RValue::Kind::Sequence).
//   SequenceEmpty, SequenceConstruct, SequenceAt, SequenceInsert, SequenceErase, SequenceLength,
//   ConcatFromSequence (axis, new_axis) opset 11; SplitToSequence opsets 11-24 (split scalar,
//   split list or none, keepdims); SequenceMap opset 17 (body run once per element).
// dtypes: any fixed-size dtype or string for the element tensors (nothing is computed; elements
// share their buffers). Not supported: sub-byte dtypes in SplitToSequence/ConcatFromSequence.
#include <string>

#include "backends/cpu/kernels/control_kernels.h"
#include "backends/cpu/kernels/kernel_util.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;

const std::vector<ir::Tensor>& seq_in(KernelContext& ctx, size_t i) {
  const RValue* v = ctx.in_value(i);
  if (!v || v->kind != RValue::Kind::Sequence)
    throw ModelError(ctx.node().describe() + ": input " + std::to_string(i) + " must be a sequence");
  return v->seq;
}

int64_t read_position(KernelContext& ctx, size_t i) {
  const ir::Tensor& p = ctx.in(i);
  if (p.numel() != 1) throw ModelError(ctx.node().describe() + ": position must be a scalar");
  return read_int_tensor(ctx.node(), p, "position")[0];
}

// Position in [-size, size + extra) -> [0, size + extra).
int64_t normalize_position(const ir::Node& n, int64_t pos, int64_t size, int64_t extra) {
  if (pos < -size || pos >= size + extra)
    throw ModelError(n.describe() + ": position " + std::to_string(pos) + " is out of range for a sequence of " +
                     std::to_string(size) + " tensors");
  return pos < 0 ? pos + size : pos;
}

void sequence_empty(KernelContext& ctx) { ctx.set_output_value(0, RValue::sequence({})); }

void sequence_construct(KernelContext& ctx) {
  std::vector<ir::Tensor> s;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    s.push_back(ctx.in(i));
    if (s.back().dtype() != s.front().dtype())
      throw ModelError(ctx.node().describe() + ": sequence elements must share one dtype");
  }
  ctx.set_output_value(0, RValue::sequence(std::move(s)));
}

void sequence_at(KernelContext& ctx) {
  const auto& s = seq_in(ctx, 0);
  const int64_t size = static_cast<int64_t>(s.size());
  ctx.set_output(0, s[normalize_position(ctx.node(), read_position(ctx, 1), size, 0)]);
}

void sequence_insert(KernelContext& ctx) {
  // The input sequence itself when nothing reads it afterwards (a Loop body that appends each
  // step's result): a copy per step made collecting n steps cost n^2 / 2 tensor copies.
  RValue* own = ctx.consumable_input(0);
  std::vector<ir::Tensor> s = own && own->kind == RValue::Kind::Sequence ? std::move(own->seq) : seq_in(ctx, 0);
  const ir::Tensor& t = ctx.in(1);
  if (!s.empty() && s.front().dtype() != t.dtype())
    throw ModelError(ctx.node().describe() + ": inserting a " + ir::dtype_name(t.dtype()) + " tensor into a sequence of " +
                     ir::dtype_name(s.front().dtype()));
  const int64_t size = static_cast<int64_t>(s.size());
  const int64_t pos = ctx.has_input(2) ? normalize_position(ctx.node(), read_position(ctx, 2), size, 1) : size;
  s.insert(s.begin() + pos, t);
  ctx.set_output_value(0, RValue::sequence(std::move(s)));
}

void sequence_erase(KernelContext& ctx) {
  std::vector<ir::Tensor> s = seq_in(ctx, 0);
  const int64_t size = static_cast<int64_t>(s.size());
  const int64_t pos = normalize_position(ctx.node(), ctx.has_input(1) ? read_position(ctx, 1) : -1, size, 0);
  s.erase(s.begin() + pos);
  ctx.set_output_value(0, RValue::sequence(std::move(s)));
}

void sequence_length(KernelContext& ctx) {
  ctx.set_output(0, ir::Tensor::scalar<int64_t>(static_cast<int64_t>(seq_in(ctx, 0).size())));
}

Kernel make_split_to_sequence(const ir::Node& node) {
  const int64_t axis_attr = node.attr_int("axis", 0);
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const int64_t rank = static_cast<int64_t>(x.rank());
    if (rank == 0) throw ModelError(n.describe() + ": cannot split a scalar");
    const int64_t axis = normalize_axis(n, axis_attr, rank);
    const int64_t dim = x.dims()[axis];
    std::vector<ir::Tensor> out;
    if (!ctx.has_input(1)) {
      for (int64_t i = 0; i < dim; ++i) out.push_back(slice_axis(n, x, axis, i, 1, keepdims));
    } else {
      const ir::Tensor& sp = ctx.in(1);
      const auto split = read_int_tensor(n, sp, "split");
      std::vector<int64_t> lens;
      if (sp.rank() == 0) {
        if (split[0] <= 0) throw ModelError(n.describe() + ": split must be positive");
        for (int64_t b = 0; b < dim; b += split[0]) lens.push_back(std::min(split[0], dim - b));
      } else {
        int64_t total = 0;
        for (int64_t l : split) {
          if (l < 0) throw ModelError(n.describe() + ": split lengths must be >= 0");
          total += l;
        }
        if (total != dim)
          throw ModelError(n.describe() + ": split lengths sum to " + std::to_string(total) + ", the axis has " +
                           std::to_string(dim));
        lens = split;
      }
      int64_t b = 0;
      for (int64_t l : lens) { out.push_back(slice_axis(n, x, axis, b, l, true)); b += l; }
    }
    ctx.set_output_value(0, RValue::sequence(std::move(out)));
  };
}

Kernel make_concat_from_sequence(const ir::Node& node) {
  if (!node.has_attr("axis")) throw ModelError(node.describe() + ": attribute 'axis' is required");
  const int64_t axis = node.attr_int("axis", 0);
  const bool new_axis = node.attr_int("new_axis", 0) != 0;
  return [=](KernelContext& ctx) {
    const auto& s = seq_in(ctx, 0);
    if (s.empty()) throw ModelError(ctx.node().describe() + ": cannot concatenate an empty sequence");
    ctx.set_output(0, new_axis ? stack_tensors(ctx.node(), s, axis) : concat_tensors(ctx.node(), s, axis));
  };
}

Kernel make_sequence_map(const ir::Node& node) {
  const ir::Graph* body = node.attr_graph("body");
  if (!body) throw ModelError(node.describe() + ": missing graph attribute 'body'");
  if (body->inputs.size() != node.inputs.size())
    throw ModelError(node.describe() + ": the body takes " + std::to_string(body->inputs.size()) +
                     " inputs, the node has " + std::to_string(node.inputs.size()));
  if (body->outputs.size() != node.outputs.size())
    throw ModelError(node.describe() + ": the body returns " + std::to_string(body->outputs.size()) +
                     " values, the node has " + std::to_string(node.outputs.size()) + " outputs");
  return [body](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const size_t len = seq_in(ctx, 0).size();
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      const RValue* v = ctx.in_value(i);
      if (v && v->kind == RValue::Kind::Sequence && v->seq.size() != len)
        throw ModelError(n.describe() + ": input sequences have different lengths");
    }
    std::vector<std::vector<ir::Tensor>> outs(ctx.num_outputs());
    for (size_t e = 0; e < len; ++e) {
      std::vector<RValue> in;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        const RValue* v = ctx.in_value(i);
        if (!v) throw ModelError(n.describe() + ": input " + std::to_string(i) + " is missing");
        in.push_back(v->kind == RValue::Kind::Sequence ? RValue::of(v->seq[e]) : *v);
      }
      std::vector<RValue> res = ctx.run_subgraph(*body, std::move(in));
      for (size_t k = 0; k < outs.size(); ++k) {
        if (res[k].kind != RValue::Kind::Tensor) throw ModelError(n.describe() + ": the body must return tensors");
        outs[k].push_back(std::move(res[k].tensor));
      }
    }
    for (size_t k = 0; k < outs.size(); ++k)
      if (ctx.wants_output(k)) ctx.set_output_value(k, RValue::sequence(std::move(outs[k])));
  };
}

}  // namespace

void register_sequence(KernelRegistry& r) {
  r.add("SequenceEmpty", 11, 0, stateless(sequence_empty));
  r.add("SequenceConstruct", 11, 0, stateless(sequence_construct));
  r.add("SequenceAt", 11, 0, stateless(sequence_at));
  r.add("SequenceInsert", 11, 0, stateless(sequence_insert));
  r.add("SequenceErase", 11, 0, stateless(sequence_erase));
  r.add("SequenceLength", 11, 0, stateless(sequence_length));
  r.add("SplitToSequence", 11, 0, make_split_to_sequence);
  r.add("ConcatFromSequence", 11, 0, make_concat_from_sequence);
  r.add("SequenceMap", 17, 0, make_sequence_map);
}

}  // namespace mcc::backends::cpu
