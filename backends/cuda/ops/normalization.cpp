// The cuda backend's BatchNormalization (inference), Instance/Group/LayerNormalization and
// Softmax/LogSoftmax: NodeChecks, factories and launches of kernels/normalization.cu and
// kernels/softmax.cu.
// Handled: BatchNormalization 7+ in inference mode with f32/f16 data and f32/f16 parameters;
// InstanceNormalization 6+ and GroupNormalization 18+ (scale/bias per group or per channel,
// chosen by their size as the cpu does; f32/f16 data and parameters); LayerNormalization 17+
// (any axis, Scale/B broadcast over the normalized dims, optional B, Mean/InvStdDev outputs as
// f32); Softmax/LogSoftmax every opset (1-12: coerced 2-D; 13+: one axis), f32/f16.
// Declined: BatchNormalization training_mode=1, spatial=0, or with its running-statistics
// outputs requested; LayerNormalization stash_type other than 1; f64/bf16 data.
#include <string>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cuda/kernels/normalization.h"
#include "backends/cuda/kernels/softmax.h"
#include "backends/cuda/op_table.h"
#include "backends/cuda/ops/elementwise_util.h"
#include "ir/errors.h"
#include "ir/op_attrs.h"

namespace mcc::backends::cuda {
namespace {

using ir::DType;
using mcc::cuda::ParamRef;

ParamRef param(const ir::Tensor& t) { return {t.device_data(), *elem_type(t.dtype())}; }

std::string float_params(const ir::Node& n, std::span<const DType> dts, size_t first, size_t end) {
  for (size_t i = first; i < end && i < dts.size(); ++i)
    if (std::string r = check_input_type(n, dts, i, {DType::F32, DType::F16}); !r.empty()) return r;
  return "";
}

// ---------------------------------------------------------------- BatchNormalization

std::string batch_norm_check(const ir::Node& n, std::span<const DType> dts) {
  const ir::BatchNormAttrs bn(n);
  if (bn.per_activation()) return "spatial=0";
  if (n.since_version >= 14 && bn.training_mode()) return "training_mode=1";
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (node_wants_output(n, i)) return "output " + std::to_string(i) + " (training statistics) is requested";
  return float_params(n, dts, 0, 5);
}

Kernel batch_norm_kernel(const ir::Node& n) {
  const float eps = ir::BatchNormAttrs(n).epsilon();
  return [eps](KernelContext& ctx) {
    const ir::Node& node = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.rank() < 2) throw ModelError(node.describe() + ": X must have rank >= 2");
    const int64_t N = x.dims()[0], C = x.dims()[1], S = x.numel() / std::max<int64_t>(N * C, 1);
    for (size_t i = 1; i < 5; ++i)
      if (ctx.in(i).numel() != C)
        throw ModelError(node.describe() + ": scale, B, mean and var must have " + std::to_string(C) + " values");
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    mcc::cuda::batch_norm(*elem_type(x.dtype()), x.device_data(), y.mutable_device_data(), N, C, S,
                          param(ctx.in(1)), param(ctx.in(2)), param(ctx.in(3)), param(ctx.in(4)), eps);
  };
}

// ---------------------------------------------------------------- InstanceNormalization

Kernel instance_norm_kernel(const ir::Node& n) {
  const float eps = n.attr_float("epsilon", 1e-5f);
  return [eps](KernelContext& ctx) {
    const ir::Node& node = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.rank() < 3) throw ModelError(node.describe() + ": X must have rank >= 3");
    const int64_t N = x.dims()[0], C = x.dims()[1], S = x.numel() / std::max<int64_t>(N * C, 1);
    if (ctx.in(1).numel() != C || ctx.in(2).numel() != C)
      throw ModelError(node.describe() + ": scale and B must have " + std::to_string(C) + " values");
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    mcc::cuda::instance_norm(*elem_type(x.dtype()), x.device_data(), y.mutable_device_data(), N, C, S,
                             param(ctx.in(1)), param(ctx.in(2)), eps);
  };
}

std::string instance_norm_check(const ir::Node& n, std::span<const DType> dts) { return float_params(n, dts, 0, 3); }

// ---------------------------------------------------------------- GroupNormalization

Kernel group_norm_kernel(const ir::Node& n) {
  const float eps = n.attr_float("epsilon", 1e-5f);
  const int64_t groups = n.attr_int("num_groups", 0);
  if (groups <= 0) throw ModelError(n.describe() + ": num_groups must be positive");
  return [eps, groups](KernelContext& ctx) {
    const ir::Node& node = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.rank() < 2) throw ModelError(node.describe() + ": X must have rank >= 2");
    const int64_t N = x.dims()[0], C = x.dims()[1], S = x.numel() / std::max<int64_t>(N * C, 1);
    if (C % groups != 0) throw ModelError(node.describe() + ": channels must be divisible by num_groups");
    const int64_t sz = ctx.in(1).numel();
    if (sz != ctx.in(2).numel() || (sz != C && sz != groups))
      throw ModelError(node.describe() + ": scale and bias must have C or num_groups values");
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    mcc::cuda::group_norm(*elem_type(x.dtype()), x.device_data(), y.mutable_device_data(), N, groups, C / groups, S,
                          sz == C, param(ctx.in(1)), param(ctx.in(2)), eps);
  };
}

// ---------------------------------------------------------------- LayerNormalization

std::string layer_norm_check(const ir::Node& n, std::span<const DType> dts) {
  if (n.attr_int("stash_type", 1) != 1) return "stash_type " + std::to_string(n.attr_int("stash_type", 1));
  return float_params(n, dts, 0, 3);
}

/// Strides of a Scale/B tensor broadcast over the normalized dims (ModelError if it does not).
mcc::cuda::Shape8 norm_param_strides(const ir::Node& n, const ir::Tensor& t, const std::vector<int64_t>& norm_dims,
                                     const char* what) {
  if (t.rank() > norm_dims.size() || cpu::broadcast_shapes(n, t.dims(), norm_dims) != norm_dims)
    throw ModelError(n.describe() + ": " + what + " cannot be broadcast to the normalized shape");
  return broadcast_to(n, t.dims(), norm_dims);
}

Kernel layer_norm_kernel(const ir::Node& n) {
  const float eps = n.attr_float("epsilon", 1e-5f);
  const int64_t axis_attr = n.attr_int("axis", -1);
  return [eps, axis_attr](KernelContext& ctx) {
    const ir::Node& node = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const auto rank = static_cast<int64_t>(x.rank());
    const int64_t axis = cpu::normalize_axis(node, axis_attr, rank);
    const std::vector<int64_t> norm_dims(x.dims().begin() + axis, x.dims().end());
    int64_t rows = 1, len = 1;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? rows : len) *= x.dims()[static_cast<size_t>(i)];
    const mcc::cuda::Shape8 ss = norm_param_strides(node, ctx.in(1), norm_dims, "Scale");
    ParamRef bias;
    mcc::cuda::Shape8 bs;
    if (ctx.has_input(2)) {
      bs = norm_param_strides(node, ctx.in(2), norm_dims, "B");
      bias = param(ctx.in(2));
    }
    std::vector<int64_t> stat_dims(x.dims().begin(), x.dims().begin() + axis);
    stat_dims.resize(static_cast<size_t>(rank), 1);
    float* mean_out = nullptr;
    float* inv_out = nullptr;
    if (ctx.num_outputs() > 1 && ctx.wants_output(1))
      mean_out = static_cast<float*>(ctx.alloc_output(1, DType::F32, stat_dims).mutable_device_data());
    if (ctx.num_outputs() > 2 && ctx.wants_output(2))
      inv_out = static_cast<float*>(ctx.alloc_output(2, DType::F32, stat_dims).mutable_device_data());
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    mcc::cuda::layer_norm(*elem_type(x.dtype()), x.device_data(), y.mutable_device_data(), rows, len,
                          param(ctx.in(1)), ss, bias, bs, eps, mean_out, inv_out);
  };
}

// ---------------------------------------------------------------- Softmax, LogSoftmax

struct Lines {
  int64_t outer = 1, len = 1, inner = 1;
};

Lines softmax_lines(const ir::Node& n, const std::vector<int64_t>& dims, int64_t axis, bool legacy) {
  const auto rank = static_cast<int64_t>(dims.size());
  Lines l;
  if (rank == 0) return l;
  if (legacy) {
    if (axis < -rank || axis > rank)
      throw ModelError(n.describe() + ": axis " + std::to_string(axis) + " is out of range for rank " +
                       std::to_string(rank));
    if (axis < 0) axis += rank;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? l.outer : l.len) *= dims[static_cast<size_t>(i)];
    return l;
  }
  axis = cpu::normalize_axis(n, axis, rank);
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = dims[static_cast<size_t>(i)];
    if (i < axis) l.outer *= d;
    else if (i == axis) l.len = d;
    else l.inner *= d;
  }
  return l;
}

KernelFactory softmax_factory(bool log) {
  return [log](const ir::Node& n) -> Kernel {
    const bool legacy = n.since_version < 13;
    const int64_t axis = n.attr_int("axis", legacy ? 1 : -1);
    return [log, legacy, axis](KernelContext& ctx) {
      const ir::Tensor& x = ctx.in(0);
      const Lines l = softmax_lines(ctx.node(), x.dims(), axis, legacy);
      ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
      mcc::cuda::softmax(*elem_type(x.dtype()), log, x.device_data(), y.mutable_device_data(), l.outer, l.len,
                         l.inner);
    };
  };
}

std::string softmax_check(const ir::Node& n, std::span<const DType> dts) {
  return check_input_type(n, dts, 0, {DType::F32, DType::F16});
}

}  // namespace

void register_normalization(OpTable& t) {
  t.add("BatchNormalization", 7, 0, batch_norm_kernel, batch_norm_check);
  t.add("InstanceNormalization", 6, 0, instance_norm_kernel, instance_norm_check);
  t.add("GroupNormalization", 18, 0, group_norm_kernel, instance_norm_check);
  t.add("LayerNormalization", 17, 0, layer_norm_kernel, layer_norm_check);
  t.add("Softmax", 1, 0, softmax_factory(false), softmax_check);
  t.add("LogSoftmax", 1, 0, softmax_factory(true), softmax_check);
}

}  // namespace mcc::backends::cuda
