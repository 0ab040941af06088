// Helpers shared by the reduction-family cpu kernels (reduce, softmax, arg/top-k, cumsum,
// resize): their registration functions, loading an element for computation and storing a
// computed value back.
// f16/bf16 are stored 16-bit and computed in f32 (or f64 where the kernel accumulates in f64).
#pragma once
#include <cmath>
#include <limits>
#include <type_traits>

#include "backends/kernel_registry.h"
#include "ir/float16.h"

namespace mcc::backends::cpu {

void register_reductions(KernelRegistry& r);  // reduce.cpp
void register_softmax(KernelRegistry& r);     // softmax.cpp
void register_arg_topk(KernelRegistry& r);    // arg_topk.cpp
void register_cumsum(KernelRegistry& r);      // cumsum.cpp
void register_resize(KernelRegistry& r);      // resize.cpp

/// True for the floating storage types (f32, f64, f16, bf16).
template <class T>
inline constexpr bool is_float_storage =
    std::is_floating_point_v<T> || std::is_same_v<T, mcc::f16> || std::is_same_v<T, mcc::bf16>;

/// An element widened for computing: f16/bf16 to float, everything else unchanged.
template <class T>
inline auto load_value(T v) {
  if constexpr (std::is_same_v<T, mcc::f16> || std::is_same_v<T, mcc::bf16>) return static_cast<float>(v);
  else return v;
}

/// A computed value stored back as T (16-bit floats through float; bool as v != 0).
template <class T, class V>
inline T store_value(V v) {
  if constexpr (std::is_same_v<T, mcc::f16> || std::is_same_v<T, mcc::bf16>) return T(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, bool>) return v != V(0);
  else return static_cast<T>(v);
}

/// A computed float value stored as an integer T: rounded to nearest, saturated to T's range
/// (floats are stored as is). Used where interpolation yields fractional values for int inputs.
template <class T>
inline T store_rounded(double v) {
  if constexpr (is_float_storage<T>) {
    return store_value<T>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else {
    if (std::isnan(v)) return T(0);
    const double r = std::nearbyint(v);
    if (r <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(r);
  }
}

}  // namespace mcc::backends::cpu
