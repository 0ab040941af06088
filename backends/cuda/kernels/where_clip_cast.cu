// Where, broadcast copy, Clip and Cast kernels (see where_clip_cast.h).
#include "backends/cuda/kernels/where_clip_cast.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace {

template <class W>
void where_t(const uint8_t* c, Shape8 sc, const void* xv, Shape8 sx, const void* zv, Shape8 sz, void* yv,
             int64_t n) {
  const W* x = static_cast<const W*>(xv);
  const W* z = static_cast<const W*>(zv);
  W* y = static_cast<W*>(yv);
  for_each(n, [=] MCC_DEVICE(int64_t i) {
    y[i] = c[strided_offset(sc, i)] ? x[strided_offset(sx, i)] : z[strided_offset(sz, i)];
  });
}

template <class W>
void copy_t(const void* xv, Shape8 sx, void* yv, int64_t n) {
  const W* x = static_cast<const W*>(xv);
  W* y = static_cast<W*>(yv);
  for_each(n, [=] MCC_DEVICE(int64_t i) { y[i] = x[strided_offset(sx, i)]; });
}

template <class T>
void clip_float(const void* xv, void* yv, int64_t n, float lo_v, float hi_v, const void* lo_dev, const void* hi_dev) {
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  const T* lo_p = static_cast<const T*>(lo_dev);
  const T* hi_p = static_cast<const T*>(hi_dev);
  for_each(n, [=] MCC_DEVICE(int64_t i) {
    const float lo = lo_p ? to_float(*lo_p) : lo_v;
    const float hi = hi_p ? to_float(*hi_p) : hi_v;
    const float v = to_float(x[i]);
    const float r = v < lo ? lo : v;
    y[i] = from_float<T>(r > hi ? hi : r);
  });
}

template <class T>
void clip_int(const void* xv, void* yv, int64_t n, int64_t lo_v, int64_t hi_v, const void* lo_dev, const void* hi_dev) {
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  const T* lo_p = static_cast<const T*>(lo_dev);
  const T* hi_p = static_cast<const T*>(hi_dev);
  for_each(n, [=] MCC_DEVICE(int64_t i) {
    const int64_t lo = lo_p ? static_cast<int64_t>(*lo_p) : lo_v;
    const int64_t hi = hi_p ? static_cast<int64_t>(*hi_p) : hi_v;
    const int64_t v = x[i];
    const int64_t r = v < lo ? lo : v;
    y[i] = static_cast<T>(r > hi ? hi : r);
  });
}

template <class T>
constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, half_t>;

/// float -> integer as the cpu does (ew::float_to_int): truncate through int64, NaN and values
/// outside int64 give INT64_MIN, then wrap to the target width; bool is != 0.
template <class To>
MCC_HD inline To float_to_int(float f) {
  if constexpr (std::is_same_v<To, bool>) {
    return f != 0.f;
  } else {
    const double v = f;
    int64_t i = INT64_MIN;
    if (v > -9223372036854775808.0 && v < 9223372036854775808.0) i = static_cast<int64_t>(v);
    return static_cast<To>(i);
  }
}

template <class From, class To>
MCC_HD inline To convert(From x) {
  if constexpr (kIsFloat<From>) {
    const float f = to_float(x);
    if constexpr (kIsFloat<To>) return from_float<To>(f);
    else return float_to_int<To>(f);
  } else if constexpr (kIsFloat<To>) {
    return from_float<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != 0;
  } else {
    return static_cast<To>(x);
  }
}

template <class From, class To>
void cast_t(const void* xv, void* yv, int64_t n) {
  const From* x = static_cast<const From*>(xv);
  To* y = static_cast<To*>(yv);
  for_each(n, [=] MCC_DEVICE(int64_t i) { y[i] = convert<From, To>(x[i]); });
}

/// Calls f(T{}) with the C++ type of t (bool as bool: one byte, 0 or 1).
template <class F>
void with_type(ElemType t, F f) {
  switch (t) {
    case ElemType::F32: f(float{}); break;
    case ElemType::F16: f(half_t{}); break;
    case ElemType::I32: f(int32_t{}); break;
    case ElemType::I64: f(int64_t{}); break;
    case ElemType::Bool: f(bool{}); break;
    case ElemType::U8: f(uint8_t{}); break;
    case ElemType::I8: f(int8_t{}); break;
  }
}

}  // namespace

void where(int elem_bytes, const void* cond, const Shape8& sc, const void* x, const Shape8& sx, const void* z,
           const Shape8& sz, void* y, int64_t n) {
  if (n <= 0) return;
  const auto* c = static_cast<const uint8_t*>(cond);
  switch (elem_bytes) {
    case 1: where_t<uint8_t>(c, sc, x, sx, z, sz, y, n); break;
    case 2: where_t<uint16_t>(c, sc, x, sx, z, sz, y, n); break;
    case 4: where_t<uint32_t>(c, sc, x, sx, z, sz, y, n); break;
    default: where_t<uint64_t>(c, sc, x, sx, z, sz, y, n); break;
  }
}

void broadcast_copy(int elem_bytes, const void* x, const Shape8& sx, void* y, int64_t n) {
  if (n <= 0) return;
  switch (elem_bytes) {
    case 1: copy_t<uint8_t>(x, sx, y, n); break;
    case 2: copy_t<uint16_t>(x, sx, y, n); break;
    case 4: copy_t<uint32_t>(x, sx, y, n); break;
    default: copy_t<uint64_t>(x, sx, y, n); break;
  }
}

void clip(ElemType type, const void* x, void* y, int64_t n, const ClipBounds& b) {
  if (n <= 0) return;
  switch (type) {
    case ElemType::F32: clip_float<float>(x, y, n, b.lo_f, b.hi_f, b.lo_dev, b.hi_dev); break;
    case ElemType::F16: clip_float<half_t>(x, y, n, b.lo_f, b.hi_f, b.lo_dev, b.hi_dev); break;
    case ElemType::I32: clip_int<int32_t>(x, y, n, b.lo_i, b.hi_i, b.lo_dev, b.hi_dev); break;
    case ElemType::I64: clip_int<int64_t>(x, y, n, b.lo_i, b.hi_i, b.lo_dev, b.hi_dev); break;
    default: break;
  }
}

void cast(ElemType from, ElemType to, const void* x, void* y, int64_t n) {
  if (n <= 0) return;
  with_type(from, [&](auto f) {
    with_type(to, [&](auto t) { cast_t<decltype(f), decltype(t)>(x, y, n); });
  });
}

}  // namespace mcc::cuda
