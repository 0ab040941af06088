// Variadic elementwise kernels with multi-input numpy broadcasting.
//
// ONNX ops (domain ai.onnx, every opset version; opsets before 8 required equal shapes, which
// broadcasting also covers): Sum, Mean, Max, Min.
//
// dtypes: Sum/Mean f32, f64, f16, bf16; Max/Min those and every integer type (opset 12+).
// Accumulation: inputs are folded left to right into the output in its own dtype (f16/bf16 are
// rounded after each step, as numpy does); Mean divides the sum once at the end. Max/Min
// propagate NaN (numpy maximum/minimum).
#include <string>

#include "backends/cpu/kernels/elementwise.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;
using ir::Tensor;
using ew::compute_t;

enum class Fold { Sum, Mean, Max, Min };

template <Fold K, class C>
C combine(C a, C b) {
  if constexpr (K == Fold::Sum || K == Fold::Mean) return a + b;
  else if constexpr (K == Fold::Max) return (a >= b || ew::is_nan(a)) ? a : b;
  else return (a <= b || ew::is_nan(a)) ? a : b;
}

template <Fold K, class T>
void fold_typed(KernelContext& ctx, const std::vector<const Tensor*>& ins, const std::vector<int64_t>& out,
                Tensor& y_t) {
  using C = compute_t<T>;
  T* y = y_t.mutable_data<T>().data();
  // y = broadcast(in0), then y = y (op) in_k for every further input.
  {
    const auto plan = ew::make_plan(out, {&ins[0]->dims(), &ins[0]->dims()});
    const T* a = ins[0]->data<T>().data();
    ew::run_binary(ctx, plan, a, a, y, [](T x, T) { return x; });
  }
  for (size_t k = 1; k < ins.size(); ++k) {
    const auto plan = ew::make_plan(out, {&out, &ins[k]->dims()});
    ew::run_binary(ctx, plan, static_cast<const T*>(y), ins[k]->data<T>().data(), y, [](T x, T v) {
      return static_cast<T>(combine<K>(static_cast<C>(x), static_cast<C>(v)));
    });
  }
  if constexpr (K == Fold::Mean) {
    const C n = static_cast<C>(ins.size());
    ctx.parallel_for(y_t.numel(), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = static_cast<T>(static_cast<C>(y[i]) / n);
    });
  }
}

template <Fold K, DType... Ds>
KernelFactory fold_factory() {
  return [](const ir::Node& n) -> Kernel {
    return [what = ew::what(n)](KernelContext& ctx) {
      std::vector<const Tensor*> ins;
      for (size_t i = 0; i < ctx.num_inputs(); ++i)
        if (ctx.has_input(i)) ins.push_back(&ctx.in(i));
      if (ins.empty()) throw ModelError(ctx.node().describe() + ": needs at least one input");
      std::vector<int64_t> out = ins[0]->dims();
      for (size_t k = 1; k < ins.size(); ++k) {
        if (ins[k]->dtype() != ins[0]->dtype())
          throw ModelError(ctx.node().describe() + ": inputs have different dtypes " +
                           ir::dtype_name(ins[0]->dtype()) + " and " + ir::dtype_name(ins[k]->dtype()));
        out = broadcast_shapes(ctx.node(), out, ins[k]->dims());
      }
      Tensor& y_t = ctx.alloc_output(0, ins[0]->dtype(), out);
      ir::dispatch<Ds...>(ins[0]->dtype(), what, [&](auto tag) {
        fold_typed<K, typename decltype(tag)::type>(ctx, ins, out, y_t);
      });
    };
  };
}

}  // namespace

void register_variadic(KernelRegistry& r) {
  r.add("Sum", 1, 0, fold_factory<Fold::Sum, MCC_FLOAT_DTYPES>());
  r.add("Mean", 1, 0, fold_factory<Fold::Mean, MCC_FLOAT_DTYPES>());
  r.add("Max", 1, 0, fold_factory<Fold::Max, MCC_NUMERIC_DTYPES>());
  r.add("Min", 1, 0, fold_factory<Fold::Min, MCC_NUMERIC_DTYPES>());
}

}  // namespace mcc::backends::cpu
