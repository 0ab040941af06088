// The cuda backend's reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp,
// ArgMax/ArgMin) and pools (MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool):
// NodeChecks, factories and launches of kernels/reduce.cu and kernels/pool.cu.
// Handled: reductions on f32/f16 (Sum, Mean, Max, Min, Prod also i32/i64) with axes as attribute
// (ReduceSum 1-12, others 1-17) or host input (13+ / 18+), keepdims, noop_with_empty_axes;
// ArgMax/ArgMin (f32, f16, i32, i64; axis, keepdims, select_last_index);
// MaxPool/AveragePool with 1-3 spatial dims, kernel/strides/pads/dilations, auto_pad, ceil_mode,
// count_include_pad (window geometry from the cpu's conv_geometry); global pools of any rank.
// Declined: MaxPool's Indices output, int8/uint8 MaxPool, f64/bf16, other integer reductions.
#include <string>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cuda/kernels/pool.h"
#include "backends/cuda/kernels/reduce.h"
#include "backends/cuda/op_table.h"
#include "backends/cuda/ops/elementwise_util.h"
#include "ir/errors.h"

namespace mcc::backends::cuda {
namespace {

using ir::DType;
using mcc::cuda::ReduceOp;
using mcc::cuda::Shape8;

/// Input dims split into kept dims (output order) and reduced dims, each as a Shape8 of input
/// strides; size-1 dims dropped and runs contiguous in the input merged.
struct ReduceLayout {
  Shape8 kept, red;
  int64_t num_out = 1, num_red = 1;
};

void push_dim(const ir::Node& n, Shape8& s, int64_t dim, int64_t stride) {
  if (s.rank > 0 && s.strides[s.rank - 1] == stride * dim) {
    s.dims[s.rank - 1] *= dim;
    s.strides[s.rank - 1] = stride;
    return;
  }
  if (s.rank == mcc::cuda::kMaxRank) throw BackendError(n.describe() + ": more than 8 dims after collapsing");
  s.dims[s.rank] = dim;
  s.strides[s.rank] = stride;
  ++s.rank;
}

ReduceLayout reduce_layout(const ir::Node& n, const std::vector<int64_t>& dims, const std::vector<bool>& reduced) {
  ReduceLayout l;
  std::vector<int64_t> strides(dims.size());
  int64_t st = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    strides[d] = st;
    st *= dims[d];
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    (reduced[d] ? l.num_red : l.num_out) *= dims[d];
    if (dims[d] != 1) push_dim(n, reduced[d] ? l.red : l.kept, dims[d], strides[d]);
  }
  return l;
}

// ---------------------------------------------------------------- reductions

NodeCheck reduce_check(ReduceOp op) {
  return [op](const ir::Node& n, std::span<const DType> dts) -> std::string {
    if (mcc::cuda::reduce_has_int(op))
      return check_input_type(n, dts, 0, {DType::F32, DType::F16, DType::I32, DType::I64});
    return check_input_type(n, dts, 0, {DType::F32, DType::F16});
  };
}

KernelFactory reduce_factory(ReduceOp op, bool axes_from_input) {
  return [op, axes_from_input](const ir::Node& n) -> Kernel {
    const bool keepdims = n.attr_int("keepdims", 1) != 0;
    const bool noop = n.attr_int("noop_with_empty_axes", 0) != 0;
    if (axes_from_input && n.has_attr("axes"))
      throw ModelError(n.describe() + ": axes is an input from this opset on, not an attribute");
    const std::vector<int64_t> attr_axes = axes_from_input ? std::vector<int64_t>{} : n.attr_ints("axes");
    return [=](KernelContext& ctx) {
      const ir::Node& node = ctx.node();
      const ir::Tensor& x = ctx.in(0);
      const auto rank = static_cast<int64_t>(x.rank());
      std::vector<int64_t> axes = attr_axes;
      if (axes_from_input && ctx.has_input(1)) axes = cpu::read_int_tensor(node, ctx.in(1), "axes");
      if (axes.empty() && noop) {
        ctx.set_output(0, x);
        return;
      }
      std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
      for (int64_t ax : axes) reduced[static_cast<size_t>(cpu::normalize_axis(node, ax, rank))] = true;
      std::vector<int64_t> out_dims;
      for (int64_t i = 0; i < rank; ++i) {
        if (!reduced[static_cast<size_t>(i)]) out_dims.push_back(x.dims()[static_cast<size_t>(i)]);
        else if (keepdims) out_dims.push_back(1);
      }
      ir::Tensor& y = ctx.alloc_output(0, x.dtype(), out_dims);
      const ReduceLayout l = reduce_layout(node, x.dims(), reduced);
      mcc::cuda::reduce(op, *elem_type(x.dtype()), x.device_data(), l.kept, l.num_out, l.red, l.num_red,
                        y.mutable_device_data());
    };
  };
}

void register_reductions(OpTable& t) {
  t.add("ReduceSum", 1, 12, reduce_factory(ReduceOp::Sum, false), reduce_check(ReduceOp::Sum));
  t.add("ReduceSum", 13, 0, reduce_factory(ReduceOp::Sum, true), reduce_check(ReduceOp::Sum), {1});
  const std::pair<const char*, ReduceOp> later[] = {
      {"ReduceMean", ReduceOp::Mean}, {"ReduceMax", ReduceOp::Max}, {"ReduceMin", ReduceOp::Min},
      {"ReduceProd", ReduceOp::Prod}, {"ReduceL1", ReduceOp::L1}, {"ReduceL2", ReduceOp::L2},
      {"ReduceLogSum", ReduceOp::LogSum}, {"ReduceLogSumExp", ReduceOp::LogSumExp},
      {"ReduceSumSquare", ReduceOp::SumSquare}};
  for (const auto& [name, op] : later) {
    t.add(name, 1, 17, reduce_factory(op, false), reduce_check(op));
    t.add(name, 18, 0, reduce_factory(op, true), reduce_check(op), {1});
  }
}

// ---------------------------------------------------------------- ArgMax, ArgMin

KernelFactory arg_factory(bool is_max) {
  return [is_max](const ir::Node& n) -> Kernel {
    const int64_t axis_attr = n.attr_int("axis", 0);
    const bool keepdims = n.attr_int("keepdims", 1) != 0;
    const bool last = n.attr_int("select_last_index", 0) != 0;
    return [=](KernelContext& ctx) {
      const ir::Node& node = ctx.node();
      const ir::Tensor& x = ctx.in(0);
      const auto rank = static_cast<int64_t>(x.rank());
      const int64_t axis = cpu::normalize_axis(node, axis_attr, rank);
      std::vector<int64_t> out_dims;
      int64_t outer = 1, len = 1, inner = 1;
      for (int64_t i = 0; i < rank; ++i) {
        const int64_t d = x.dims()[static_cast<size_t>(i)];
        if (i != axis) out_dims.push_back(d);
        else if (keepdims) out_dims.push_back(1);
        (i < axis ? outer : (i == axis ? len : inner)) *= d;
      }
      if (len == 0 && outer * inner > 0)
        throw ModelError(node.describe() + ": " + node.op_type + " over an empty axis");
      ir::Tensor& y = ctx.alloc_output(0, DType::I64, out_dims);
      mcc::cuda::arg_reduce(is_max, last, *elem_type(x.dtype()), x.device_data(), outer, len, inner,
                            static_cast<int64_t*>(y.mutable_device_data()));
    };
  };
}

// ---------------------------------------------------------------- pools

std::string pool_check(const ir::Node& n, std::span<const DType> dts) {
  if (n.op_type == "MaxPool" && node_wants_output(n, 1)) return "the Indices output is requested";
  return check_input_type(n, dts, 0, {DType::F32, DType::F16});
}

KernelFactory pool_factory(mcc::cuda::PoolOp op) {
  return [op](const ir::Node& n) -> Kernel {
    const cpu::WindowAttrs wa = cpu::WindowAttrs::parse(n);
    if (wa.kernel_shape.empty()) throw ModelError(n.describe() + ": kernel_shape is required");
    const bool count_include_pad = n.attr_int("count_include_pad", 0) != 0;
    return [op, wa, count_include_pad](KernelContext& ctx) {
      const ir::Node& node = ctx.node();
      const ir::Tensor& x = ctx.in(0);
      if (x.rank() < 3 || x.rank() > 5)
        throw ModelError(node.describe() + ": X must have 1 to 3 spatial dims, got rank " + std::to_string(x.rank()));
      const cpu::WindowGeom g = cpu::conv_geometry(node, wa, x.dims(), wa.kernel_shape, true);
      mcc::cuda::PoolWindow w;
      for (int j = 0; j < 3; ++j) {
        w.in[j] = g.in[j], w.k[j] = g.k[j], w.out[j] = g.out[j], w.stride[j] = g.stride[j];
        w.dil[j] = g.dil[j], w.pad_b[j] = g.pad_b[j], w.pad_e[j] = g.pad_e[j];
      }
      const int64_t N = x.dims()[0], C = x.dims()[1];
      ir::Tensor& y = ctx.alloc_output(0, x.dtype(), g.out_dims(N, C));
      mcc::cuda::pool(op, *elem_type(x.dtype()), x.device_data(), y.mutable_device_data(), N * C, w,
                      count_include_pad);
    };
  };
}

KernelFactory global_pool_factory(ReduceOp op) {
  return [op](const ir::Node&) -> Kernel {
    return [op](KernelContext& ctx) {
      const ir::Tensor& x = ctx.in(0);
      if (x.rank() < 2) throw ModelError(ctx.node().describe() + ": X must have rank >= 2");
      std::vector<bool> reduced(x.rank(), true);
      reduced[0] = reduced[1] = false;
      std::vector<int64_t> out_dims = x.dims();
      for (size_t d = 2; d < out_dims.size(); ++d) out_dims[d] = 1;
      ir::Tensor& y = ctx.alloc_output(0, x.dtype(), out_dims);
      const ReduceLayout l = reduce_layout(ctx.node(), x.dims(), reduced);
      mcc::cuda::reduce(op, *elem_type(x.dtype()), x.device_data(), l.kept, l.num_out, l.red, l.num_red,
                        y.mutable_device_data());
    };
  };
}

void register_pools(OpTable& t) {
  t.add("MaxPool", 1, 0, pool_factory(mcc::cuda::PoolOp::Max), pool_check);
  t.add("AveragePool", 1, 0, pool_factory(mcc::cuda::PoolOp::Average), pool_check);
  t.add("GlobalAveragePool", 1, 0, global_pool_factory(ReduceOp::Mean), pool_check);
  t.add("GlobalMaxPool", 1, 0, global_pool_factory(ReduceOp::Max), pool_check);
}

}  // namespace

void register_reduce_pool(OpTable& t) {
  register_reductions(t);
  t.add("ArgMax", 1, 0, arg_factory(true), reduce_check(ReduceOp::Max));
  t.add("ArgMin", 1, 0, arg_factory(false), reduce_check(ReduceOp::Min));
  register_pools(t);
}

}  // namespace mcc::backends::cuda
