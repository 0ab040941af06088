// Binary elementwise kernels (see binary.h): one thread per output element, inputs addressed
// through their broadcast strides; the op is a template parameter.
#include "backends/cuda/kernels/binary.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace {

template <class T>
MCC_HD inline T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

/// Integer power by squaring (wraps); negative exponents give 1/base^-e truncated (as the cpu).
template <class T>
MCC_HD inline T int_pow(T base, int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if (base == -1) return (e % 2 == 0) ? T(1) : T(-1);
    return 0;
  }
  T r = 1;
  while (e > 0) {
    if (e & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return r;
}

template <BinaryOp Op>
MCC_HD inline float arith_float(float a, float b) {
  if constexpr (Op == BinaryOp::Add) return a + b;
  else if constexpr (Op == BinaryOp::Sub) return a - b;
  else if constexpr (Op == BinaryOp::Mul) return a * b;
  else if constexpr (Op == BinaryOp::Div) return a / b;
  else if constexpr (Op == BinaryOp::Pow) return powf(a, b);
  else if constexpr (Op == BinaryOp::Max) return (a >= b || a != a) ? a : b;  // NaN propagates
  else if constexpr (Op == BinaryOp::Min) return (a <= b || a != a) ? a : b;
  else if constexpr (Op == BinaryOp::Mod || Op == BinaryOp::Fmod) {
    float r = fmodf(a, b);
    if (Op == BinaryOp::Mod && r != 0.f && ((r < 0.f) != (b < 0.f))) r += b;
    return r;
  } else return a < 0.f ? b * a : a;  // PRelu: b is the slope
}

template <BinaryOp Op, class T>
MCC_HD inline T arith_int(T a, T b) {
  if constexpr (Op == BinaryOp::Add) return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else if constexpr (Op == BinaryOp::Sub) return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else if constexpr (Op == BinaryOp::Mul) return wrap_mul(a, b);
  else if constexpr (Op == BinaryOp::Div) {
    if (b == 0) return 0;
    if (b == -1) return static_cast<T>(uint64_t(0) - static_cast<uint64_t>(a));
    return static_cast<T>(a / b);
  } else if constexpr (Op == BinaryOp::Pow) return int_pow<T>(a, static_cast<int64_t>(b));
  else if constexpr (Op == BinaryOp::Max) return a >= b ? a : b;
  else if constexpr (Op == BinaryOp::Min) return a <= b ? a : b;
  else if constexpr (Op == BinaryOp::Mod || Op == BinaryOp::Fmod) {
    if (b == 0 || b == -1) return 0;
    T r = static_cast<T>(a % b);
    if (Op == BinaryOp::Mod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  } else return a < 0 ? wrap_mul(b, a) : a;  // PRelu
}

template <BinaryOp Op, class C>
MCC_HD inline bool compare(C a, C b) {
  if constexpr (Op == BinaryOp::Equal) return a == b;
  else if constexpr (Op == BinaryOp::Less) return a < b;
  else if constexpr (Op == BinaryOp::Greater) return a > b;
  else if constexpr (Op == BinaryOp::LessOrEqual) return a <= b;
  else return a >= b;
}

template <BinaryOp Op, class T>
MCC_HD inline T arith(T x, T z) {
  if constexpr (std::is_integral_v<T>) return arith_int<Op, T>(x, z);
  else return from_float<T>(arith_float<Op>(to_float(x), to_float(z)));
}
template <BinaryOp Op, class T>
MCC_HD inline bool compare_typed(T x, T z) {
  if constexpr (std::is_integral_v<T>) return compare<Op>(x, z);
  else return compare<Op>(to_float(x), to_float(z));
}
template <BinaryOp Op>
MCC_HD inline bool logical(bool x, bool z) {
  if constexpr (Op == BinaryOp::And) return x && z;
  else if constexpr (Op == BinaryOp::Or) return x || z;
  else return x != z;
}

template <BinaryOp Op, class T>
void run_arith(const void* av, Shape8 sa, const void* bv, Shape8 sb, void* yv, int64_t n) {
  const T* a = static_cast<const T*>(av);
  const T* b = static_cast<const T*>(bv);
  T* y = static_cast<T*>(yv);
  for_each(n, [=] MCC_DEVICE(int64_t i) {
    const T x = a[strided_offset(sa, i)], z = b[strided_offset(sb, i)];
    y[i] = arith<Op, T>(x, z);
  });
}

template <BinaryOp Op, class T>
void run_compare(const void* av, Shape8 sa, const void* bv, Shape8 sb, void* yv, int64_t n) {
  const T* a = static_cast<const T*>(av);
  const T* b = static_cast<const T*>(bv);
  uint8_t* y = static_cast<uint8_t*>(yv);
  for_each(n, [=] MCC_DEVICE(int64_t i) {
    const T x = a[strided_offset(sa, i)], z = b[strided_offset(sb, i)];
    y[i] = compare_typed<Op, T>(x, z) ? 1 : 0;
  });
}

template <BinaryOp Op>
void run_logical(const void* av, Shape8 sa, const void* bv, Shape8 sb, void* yv, int64_t n) {
  const uint8_t* a = static_cast<const uint8_t*>(av);
  const uint8_t* b = static_cast<const uint8_t*>(bv);
  uint8_t* y = static_cast<uint8_t*>(yv);
  for_each(n, [=] MCC_DEVICE(int64_t i) {
    const bool x = a[strided_offset(sa, i)] != 0, z = b[strided_offset(sb, i)] != 0;
    y[i] = logical<Op>(x, z) ? 1 : 0;
  });
}

template <BinaryOp Op>
void run_typed(ElemType type, const void* a, const Shape8& sa, const void* b, const Shape8& sb, void* y,
               int64_t n) {
  if constexpr (Op == BinaryOp::And || Op == BinaryOp::Or || Op == BinaryOp::Xor) {
    run_logical<Op>(a, sa, b, sb, y, n);
  } else {
    constexpr bool kCompare = Op == BinaryOp::Equal || Op == BinaryOp::Less || Op == BinaryOp::Greater ||
                              Op == BinaryOp::LessOrEqual || Op == BinaryOp::GreaterOrEqual;
    auto run = [&](auto tag) {
      using T = decltype(tag);
      if constexpr (kCompare) run_compare<Op, T>(a, sa, b, sb, y, n);
      else run_arith<Op, T>(a, sa, b, sb, y, n);
    };
    switch (type) {
      case ElemType::F32: run(float{}); break;
      case ElemType::F16: run(half_t{}); break;
      case ElemType::I32: run(int32_t{}); break;
      case ElemType::I64: run(int64_t{}); break;
      case ElemType::Bool:
        if constexpr (Op == BinaryOp::Equal) run_compare<Op, uint8_t>(a, sa, b, sb, y, n);
        break;
      default: break;
    }
  }
}

}  // namespace

bool binary_is_compare(BinaryOp op) {
  return op == BinaryOp::Equal || op == BinaryOp::Less || op == BinaryOp::Greater ||
         op == BinaryOp::LessOrEqual || op == BinaryOp::GreaterOrEqual;
}
bool binary_is_logical(BinaryOp op) { return op == BinaryOp::And || op == BinaryOp::Or || op == BinaryOp::Xor; }

void binary(BinaryOp op, ElemType type, const void* a, const Shape8& sa, const void* b, const Shape8& sb,
            void* y, int64_t n) {
  if (n <= 0) return;
  switch (op) {
#define MCC_BINARY_CASE(OP) \
  case BinaryOp::OP: run_typed<BinaryOp::OP>(type, a, sa, b, sb, y, n); break;
    MCC_BINARY_CASE(Add) MCC_BINARY_CASE(Sub) MCC_BINARY_CASE(Mul) MCC_BINARY_CASE(Div)
    MCC_BINARY_CASE(Pow) MCC_BINARY_CASE(Max) MCC_BINARY_CASE(Min) MCC_BINARY_CASE(PRelu)
    MCC_BINARY_CASE(Mod) MCC_BINARY_CASE(Fmod)
    MCC_BINARY_CASE(Equal) MCC_BINARY_CASE(Less) MCC_BINARY_CASE(Greater)
    MCC_BINARY_CASE(LessOrEqual) MCC_BINARY_CASE(GreaterOrEqual)
    MCC_BINARY_CASE(And) MCC_BINARY_CASE(Or) MCC_BINARY_CASE(Xor)
#undef MCC_BINARY_CASE
  }
}

void divide_inplace(ElemType type, void* yv, int64_t n, float divisor) {
  if (type == ElemType::F32) {
    float* y = static_cast<float*>(yv);
    for_each(n, [=] MCC_DEVICE(int64_t i) { y[i] = y[i] / divisor; });
  } else if (type == ElemType::F16) {
    half_t* y = static_cast<half_t*>(yv);
    for_each(n, [=] MCC_DEVICE(int64_t i) { y[i] = from_float<half_t>(to_float(y[i]) / divisor); });
  }
}

}  // namespace mcc::cuda
