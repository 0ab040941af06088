// Unary elementwise kernels (see unary.h): one thread per element; the op is a template
// parameter, so each (op, type) pair is its own kernel without a per-element switch.
#include "backends/cuda/kernels/unary.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace {

MCC_HD inline float softplus_of(float x) { return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x)); }

template <UnaryOp Op>
MCC_HD inline float apply_float(float x, float a, float b) {
  if constexpr (Op == UnaryOp::Relu) return x < 0.f ? 0.f : x;
  else if constexpr (Op == UnaryOp::Sigmoid) return 1.f / (1.f + expf(-x));
  else if constexpr (Op == UnaryOp::Tanh) return tanhf(x);
  else if constexpr (Op == UnaryOp::Exp) return expf(x);
  else if constexpr (Op == UnaryOp::Log) return logf(x);
  else if constexpr (Op == UnaryOp::Sqrt) return sqrtf(x);
  else if constexpr (Op == UnaryOp::Neg) return -x;
  else if constexpr (Op == UnaryOp::Abs) return fabsf(x);
  else if constexpr (Op == UnaryOp::Reciprocal) return 1.f / x;
  else if constexpr (Op == UnaryOp::Floor) return floorf(x);
  else if constexpr (Op == UnaryOp::Ceil) return ceilf(x);
  else if constexpr (Op == UnaryOp::Round) return rintf(x);  // half to even
  else if constexpr (Op == UnaryOp::Erf) return erff(x);
  else if constexpr (Op == UnaryOp::Sin) return sinf(x);
  else if constexpr (Op == UnaryOp::Cos) return cosf(x);
  else if constexpr (Op == UnaryOp::Softplus) return softplus_of(x);
  else if constexpr (Op == UnaryOp::Softsign) return x / (1.f + fabsf(x));
  else if constexpr (Op == UnaryOp::Elu) return x < 0.f ? a * (expf(x) - 1.f) : x;
  else if constexpr (Op == UnaryOp::Celu) return fmaxf(0.f, x) + fminf(0.f, a * (expf(x / a) - 1.f));
  else if constexpr (Op == UnaryOp::LeakyRelu) return x < 0.f ? a * x : x;
  else if constexpr (Op == UnaryOp::ThresholdedRelu) return x > a ? x : 0.f;
  else if constexpr (Op == UnaryOp::HardSigmoid) return fmaxf(0.f, fminf(1.f, a * x + b));
  else if constexpr (Op == UnaryOp::HardSwish) return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
  else if constexpr (Op == UnaryOp::GeluErf) return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  else if constexpr (Op == UnaryOp::GeluTanh)
    return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  else if constexpr (Op == UnaryOp::Mish) return x * tanhf(softplus_of(x));
  else if constexpr (Op == UnaryOp::Selu) return x > 0.f ? b * x : b * (a * expf(x) - a);
  else if constexpr (Op == UnaryOp::Sign) return x > 0.f ? 1.f : (x < 0.f ? -1.f : (x == 0.f ? 0.f : x));
  else if constexpr (Op == UnaryOp::Tan) return tanf(x);
  else if constexpr (Op == UnaryOp::Asin) return asinf(x);
  else if constexpr (Op == UnaryOp::Acos) return acosf(x);
  else if constexpr (Op == UnaryOp::Atan) return atanf(x);
  else if constexpr (Op == UnaryOp::Sinh) return sinhf(x);
  else if constexpr (Op == UnaryOp::Cosh) return coshf(x);
  else if constexpr (Op == UnaryOp::Asinh) return asinhf(x);
  else if constexpr (Op == UnaryOp::Acosh) return acoshf(x);
  else if constexpr (Op == UnaryOp::Atanh) return atanhf(x);
  else if constexpr (Op == UnaryOp::Swish) return x / (1.f + expf(-a * x));
  else return x;
}

template <UnaryOp Op, class T>
MCC_HD inline T apply_int(T v) {
  using U = std::make_unsigned_t<T>;
  if constexpr (Op == UnaryOp::Neg) return static_cast<T>(U(0) - static_cast<U>(v));
  else if constexpr (Op == UnaryOp::Abs) return v < 0 ? static_cast<T>(U(0) - static_cast<U>(v)) : v;
  else if constexpr (Op == UnaryOp::Sign) return v > 0 ? T(1) : (v < 0 ? T(-1) : T(0));
  else if constexpr (Op == UnaryOp::Relu) return v > 0 ? v : T(0);
  else return v;
}

template <UnaryOp Op, class T>
void run_float(const void* xv, void* yv, int64_t n, float a, float b) {
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  for_each(n, [=] MCC_DEVICE(int64_t i) { y[i] = from_float<T>(apply_float<Op>(to_float(x[i]), a, b)); });
}

template <UnaryOp Op, class T>
void run_int(const void* xv, void* yv, int64_t n) {
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  for_each(n, [=] MCC_DEVICE(int64_t i) { y[i] = apply_int<Op, T>(x[i]); });
}

void run_not(const void* xv, void* yv, int64_t n) {
  const uint8_t* x = static_cast<const uint8_t*>(xv);
  uint8_t* y = static_cast<uint8_t*>(yv);
  for_each(n, [=] MCC_DEVICE(int64_t i) { y[i] = x[i] ? 0 : 1; });
}

template <UnaryOp Op>
void run_typed(ElemType type, const void* x, void* y, int64_t n, float a, float b) {
  switch (type) {
    case ElemType::F32: run_float<Op, float>(x, y, n, a, b); break;
    case ElemType::F16: run_float<Op, half_t>(x, y, n, a, b); break;
    case ElemType::I32:
      if constexpr (Op == UnaryOp::Neg || Op == UnaryOp::Abs || Op == UnaryOp::Sign || Op == UnaryOp::Relu)
        run_int<Op, int32_t>(x, y, n);
      break;
    case ElemType::I64:
      if constexpr (Op == UnaryOp::Neg || Op == UnaryOp::Abs || Op == UnaryOp::Sign || Op == UnaryOp::Relu)
        run_int<Op, int64_t>(x, y, n);
      break;
    default: break;
  }
}

}  // namespace

bool unary_has_int(UnaryOp op) {
  return op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Sign || op == UnaryOp::Relu;
}

void unary(UnaryOp op, ElemType type, const void* x, void* y, int64_t n, float a, float b) {
  if (n <= 0) return;
  switch (op) {
#define MCC_UNARY_CASE(OP) \
  case UnaryOp::OP: run_typed<UnaryOp::OP>(type, x, y, n, a, b); break;
    MCC_UNARY_CASE(Relu) MCC_UNARY_CASE(Sigmoid) MCC_UNARY_CASE(Tanh) MCC_UNARY_CASE(Exp)
    MCC_UNARY_CASE(Log) MCC_UNARY_CASE(Sqrt) MCC_UNARY_CASE(Neg) MCC_UNARY_CASE(Abs)
    MCC_UNARY_CASE(Reciprocal) MCC_UNARY_CASE(Floor) MCC_UNARY_CASE(Ceil) MCC_UNARY_CASE(Round)
    MCC_UNARY_CASE(Erf) MCC_UNARY_CASE(Sin) MCC_UNARY_CASE(Cos) MCC_UNARY_CASE(Softplus)
    MCC_UNARY_CASE(Softsign) MCC_UNARY_CASE(Elu) MCC_UNARY_CASE(Celu) MCC_UNARY_CASE(LeakyRelu)
    MCC_UNARY_CASE(ThresholdedRelu) MCC_UNARY_CASE(HardSigmoid) MCC_UNARY_CASE(HardSwish)
    MCC_UNARY_CASE(GeluErf) MCC_UNARY_CASE(GeluTanh) MCC_UNARY_CASE(Mish) MCC_UNARY_CASE(Selu)
    MCC_UNARY_CASE(Sign) MCC_UNARY_CASE(Tan) MCC_UNARY_CASE(Asin) MCC_UNARY_CASE(Acos)
    MCC_UNARY_CASE(Atan) MCC_UNARY_CASE(Sinh) MCC_UNARY_CASE(Cosh) MCC_UNARY_CASE(Asinh)
    MCC_UNARY_CASE(Acosh) MCC_UNARY_CASE(Atanh) MCC_UNARY_CASE(Swish)
#undef MCC_UNARY_CASE
    case UnaryOp::Not: run_not(x, y, n); break;
  }
}

}  // namespace mcc::cuda
