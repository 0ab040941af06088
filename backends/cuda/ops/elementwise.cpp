// The cuda backend's unary, binary (numpy broadcasting) and variadic (Sum, Mean, Max, Min)
// elementwise ops: NodeChecks, factories and launches of kernels/unary.cu and kernels/binary.cu.
// Handled: float unary ops on f32/f16 (Neg, Abs, Sign, Relu also i32/i64; Not on bool); binary
// arithmetic (Mod with fmod 0 or 1 included) on one shared dtype of f32, f16, i32, i64 (opset 7+;
// the legacy broadcast attribute of older opsets is not handled); comparisons (bool output; Equal also on bool); And/Or/Xor.
// Declined: mixed input dtypes (Pow with an exponent of another type included), f64, bf16, other
// integer widths, Gelu approximations other than none/tanh.
#include <string>

#include "backends/cuda/kernels/binary.h"
#include "backends/cuda/kernels/unary.h"
#include "backends/cuda/kernels/where_clip_cast.h"
#include "backends/cuda/op_table.h"
#include "backends/cuda/ops/elementwise_util.h"
#include "ir/errors.h"

namespace mcc::backends::cuda {
namespace {

using ir::DType;
using mcc::cuda::BinaryOp;
using mcc::cuda::UnaryOp;

// ---------------------------------------------------------------- unary

NodeCheck unary_check(UnaryOp op) {
  return [op](const ir::Node& n, std::span<const DType> dts) -> std::string {
    if (op == UnaryOp::Not) return check_input_type(n, dts, 0, {DType::Bool});
    if (mcc::cuda::unary_has_int(op))
      return check_input_type(n, dts, 0, {DType::F32, DType::F16, DType::I32, DType::I64});
    if (op == UnaryOp::GeluErf) {
      const std::string approx = n.attr_string("approximate", "none");
      if (approx != "none" && approx != "tanh") return "Gelu approximate '" + approx + "'";
    }
    if (op == UnaryOp::Celu && n.attr_float("alpha", 1.f) == 0.f) return "Celu alpha is 0";
    return check_input_type(n, dts, 0, {DType::F32, DType::F16});
  };
}

/// The attributes (alpha, beta) the op's formula reads, with their ONNX defaults.
std::pair<float, float> unary_attrs(UnaryOp op, const ir::Node& n) {
  switch (op) {
    case UnaryOp::LeakyRelu: return {n.attr_float("alpha", 0.01f), 0.f};
    case UnaryOp::Elu: case UnaryOp::Celu: case UnaryOp::ThresholdedRelu: case UnaryOp::Swish:
      return {n.attr_float("alpha", 1.f), 0.f};
    case UnaryOp::HardSigmoid: return {n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
    case UnaryOp::Selu:
      return {n.attr_float("alpha", 1.67326319217681884765625f), n.attr_float("gamma", 1.05070102214813232421875f)};
    default: return {0.f, 0.f};
  }
}

KernelFactory unary_factory(UnaryOp op) {
  return [op](const ir::Node& n) -> Kernel {
    UnaryOp actual = op;
    if (op == UnaryOp::GeluErf && n.attr_string("approximate", "none") == "tanh") actual = UnaryOp::GeluTanh;
    const auto [alpha, beta] = unary_attrs(op, n);
    return [actual, alpha, beta](KernelContext& ctx) {
      const ir::Tensor& x = ctx.in(0);
      ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
      mcc::cuda::unary(actual, *elem_type(x.dtype()), x.device_data(), y.mutable_device_data(), x.numel(),
                       alpha, beta);
    };
  };
}

void register_unary(OpTable& t) {
  const std::pair<const char*, UnaryOp> ops[] = {
      {"Relu", UnaryOp::Relu}, {"Sigmoid", UnaryOp::Sigmoid}, {"Tanh", UnaryOp::Tanh},
      {"Exp", UnaryOp::Exp}, {"Log", UnaryOp::Log}, {"Sqrt", UnaryOp::Sqrt}, {"Neg", UnaryOp::Neg},
      {"Abs", UnaryOp::Abs}, {"Reciprocal", UnaryOp::Reciprocal}, {"Floor", UnaryOp::Floor},
      {"Ceil", UnaryOp::Ceil}, {"Round", UnaryOp::Round}, {"Erf", UnaryOp::Erf}, {"Sin", UnaryOp::Sin},
      {"Cos", UnaryOp::Cos}, {"Softplus", UnaryOp::Softplus}, {"Softsign", UnaryOp::Softsign},
      {"Elu", UnaryOp::Elu}, {"Celu", UnaryOp::Celu}, {"LeakyRelu", UnaryOp::LeakyRelu},
      {"ThresholdedRelu", UnaryOp::ThresholdedRelu}, {"HardSigmoid", UnaryOp::HardSigmoid},
      {"HardSwish", UnaryOp::HardSwish}, {"Gelu", UnaryOp::GeluErf}, {"Mish", UnaryOp::Mish},
      {"Selu", UnaryOp::Selu}, {"Sign", UnaryOp::Sign}, {"Not", UnaryOp::Not}, {"Tan", UnaryOp::Tan},
      {"Asin", UnaryOp::Asin}, {"Acos", UnaryOp::Acos}, {"Atan", UnaryOp::Atan}, {"Sinh", UnaryOp::Sinh},
      {"Cosh", UnaryOp::Cosh}, {"Asinh", UnaryOp::Asinh}, {"Acosh", UnaryOp::Acosh}, {"Atanh", UnaryOp::Atanh},
  };
  for (const auto& [name, op] : ops) t.add(name, 1, 0, unary_factory(op), unary_check(op));
  t.add("Swish", 24, 0, unary_factory(UnaryOp::Swish), unary_check(UnaryOp::Swish));
}

// ---------------------------------------------------------------- binary

NodeCheck binary_check(BinaryOp op) {
  return [op](const ir::Node& n, std::span<const DType> dts) -> std::string {
    if (op == BinaryOp::Mod && n.attr_int("fmod", 0) != 0 && n.attr_int("fmod", 0) != 1)
      return "fmod " + std::to_string(n.attr_int("fmod", 0));
    std::string r;
    if (mcc::cuda::binary_is_logical(op)) r = check_input_type(n, dts, 0, {DType::Bool});
    else if (op == BinaryOp::Equal)
      r = check_input_type(n, dts, 0, {DType::F32, DType::F16, DType::I32, DType::I64, DType::Bool});
    else r = check_input_type(n, dts, 0, {DType::F32, DType::F16, DType::I32, DType::I64});
    return r.empty() ? check_same_types(n, dts, 0) : r;
  };
}

KernelFactory binary_factory(BinaryOp op) {
  return [op_type = op](const ir::Node& n) -> Kernel {
    const BinaryOp op = op_type == BinaryOp::Mod && n.attr_int("fmod", 0) == 1 ? BinaryOp::Fmod : op_type;
    return [op](KernelContext& ctx) {
      const ir::Tensor& a = ctx.in(0);
      const ir::Tensor& b = ctx.in(1);
      const Broadcast bc = broadcast(ctx.node(), {a.dims(), b.dims()});
      if (op == BinaryOp::PRelu && bc.out != a.dims())
        throw ModelError(ctx.node().describe() + ": slope must broadcast to X's shape (unidirectional)");
      const bool to_bool = mcc::cuda::binary_is_compare(op) || mcc::cuda::binary_is_logical(op);
      ir::Tensor& y = ctx.alloc_output(0, to_bool ? DType::Bool : a.dtype(), bc.out);
      mcc::cuda::binary(op, *elem_type(a.dtype()), a.device_data(), bc.in[0], b.device_data(), bc.in[1],
                        y.mutable_device_data(), bc.numel);
    };
  };
}

/// Sum, Mean, Max, Min: inputs folded left to right into the output; Mean divides at the end.
KernelFactory fold_factory(BinaryOp op, bool mean) {
  return [op, mean](const ir::Node&) -> Kernel {
    return [op, mean](KernelContext& ctx) {
      const ir::Node& n = ctx.node();
      std::vector<std::vector<int64_t>> dims;
      std::vector<const ir::Tensor*> ins;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        ins.push_back(&ctx.in(i));
        dims.push_back(ins.back()->dims());
      }
      if (ins.empty()) throw ModelError(n.describe() + ": needs at least one input");
      const Broadcast all = broadcast(n, dims);
      const auto et = *elem_type(ins[0]->dtype());
      ir::Tensor& y = ctx.alloc_output(0, ins[0]->dtype(), all.out);
      void* yp = y.mutable_device_data();
      if (ins.size() == 1) {
        mcc::cuda::broadcast_copy(mcc::cuda::elem_bytes(et), ins[0]->device_data(), all.in[0], yp, all.numel);
      } else {
        // The first pair read as broadcast to the whole output (a third, full-size operand).
        const Broadcast pair = broadcast(n, {dims[0], dims[1], all.out});
        mcc::cuda::binary(op, et, ins[0]->device_data(), pair.in[0], ins[1]->device_data(), pair.in[1], yp,
                          all.numel);
        for (size_t k = 2; k < ins.size(); ++k) {
          const Broadcast step = broadcast(n, {all.out, dims[k]});
          mcc::cuda::binary(op, et, yp, step.in[0], ins[k]->device_data(), step.in[1], yp, all.numel);
        }
      }
      if (mean) mcc::cuda::divide_inplace(et, yp, all.numel, static_cast<float>(ins.size()));
    };
  };
}

NodeCheck fold_check(bool float_only) {
  return [float_only](const ir::Node& n, std::span<const DType> dts) -> std::string {
    const std::string r = float_only ? check_input_type(n, dts, 0, {DType::F32, DType::F16})
                                     : check_input_type(n, dts, 0, {DType::F32, DType::F16, DType::I32, DType::I64});
    return r.empty() ? check_same_types(n, dts, 0) : r;
  };
}

void register_binary(OpTable& t) {
  const std::tuple<const char*, int, BinaryOp> ops[] = {
      {"Add", 7, BinaryOp::Add}, {"Sub", 7, BinaryOp::Sub}, {"Mul", 7, BinaryOp::Mul},
      {"Div", 7, BinaryOp::Div}, {"Pow", 7, BinaryOp::Pow}, {"PRelu", 7, BinaryOp::PRelu},
      {"Mod", 10, BinaryOp::Mod},
      {"Equal", 7, BinaryOp::Equal}, {"Less", 7, BinaryOp::Less}, {"Greater", 7, BinaryOp::Greater},
      {"LessOrEqual", 12, BinaryOp::LessOrEqual}, {"GreaterOrEqual", 12, BinaryOp::GreaterOrEqual},
      {"And", 7, BinaryOp::And}, {"Or", 7, BinaryOp::Or}, {"Xor", 7, BinaryOp::Xor},
  };
  for (const auto& [name, since, op] : ops) t.add(name, since, 0, binary_factory(op), binary_check(op));
  t.add("Sum", 6, 0, fold_factory(BinaryOp::Add, false), fold_check(true));
  t.add("Mean", 6, 0, fold_factory(BinaryOp::Add, true), fold_check(true));
  t.add("Max", 6, 0, fold_factory(BinaryOp::Max, false), fold_check(false));
  t.add("Min", 6, 0, fold_factory(BinaryOp::Min, false), fold_check(false));
}

}  // namespace

void register_elementwise(OpTable& t) {
  register_unary(t);
  register_binary(t);
  register_where_clip_cast(t);
}

}  // namespace mcc::backends::cuda
