// Small helpers shared by the misc kernel family (losses, detection, signal, linalg, text,
// training, random): element load/store through double, scalar input readers, and the
// per-file registration functions called from register_misc.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/kernel_registry.h"

namespace mcc::backends::cpu {

void register_loss(KernelRegistry& r);       // loss.cpp
void register_detection(KernelRegistry& r);  // detection.cpp
void register_signal(KernelRegistry& r);     // signal.cpp
void register_linalg(KernelRegistry& r);     // linalg.cpp
void register_text(KernelRegistry& r);       // text.cpp
void register_training(KernelRegistry& r);   // training.cpp
void register_random(KernelRegistry& r);     // random.cpp

namespace misc {

/// Element -> double (f16/bf16 go through float).
template <class T>
inline double to_f64(T v) {
  if constexpr (std::is_arithmetic_v<T>) return static_cast<double>(v);
  else return static_cast<double>(static_cast<float>(v));
}

/// double -> element (f16/bf16 go through float; integers truncate as static_cast does).
template <class T>
inline T from_f64(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0.0;
  else if constexpr (std::is_arithmetic_v<T>) return static_cast<T>(v);
  else return T(static_cast<float>(v));
}

/// Reads any numeric tensor as doubles.
inline std::vector<double> read_f64(const ir::Node& n, const ir::Tensor& t, const char* what) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  ir::dispatch<MCC_NUMERIC_DTYPES>(t.dtype(), n.describe() + ": " + what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T v : t.data<T>()) out.push_back(to_f64(v));
  });
  return out;
}

/// Writes doubles into a numeric tensor of any dtype (sizes must match).
inline void write_f64(const ir::Node& n, ir::Tensor& t, const std::vector<double>& v, const char* what) {
  ir::dispatch<MCC_ALL_DTYPES>(t.dtype(), n.describe() + ": " + what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto d = t.mutable_data<T>();
    for (size_t i = 0; i < d.size() && i < v.size(); ++i) d[i] = from_f64<T>(v[i]);
  });
}

/// The single value of a scalar (or one-element) numeric input.
inline double scalar_f64(const ir::Node& n, const ir::Tensor& t, const char* what) {
  if (t.numel() != 1)
    throw ModelError(n.describe() + ": " + what + " must hold exactly one value, got " +
                     std::to_string(t.numel()));
  return read_f64(n, t, what)[0];
}

inline int64_t scalar_i64(const ir::Node& n, const ir::Tensor& t, const char* what) {
  if (t.numel() != 1)
    throw ModelError(n.describe() + ": " + what + " must hold exactly one value, got " +
                     std::to_string(t.numel()));
  return read_int_tensor(n, t, what)[0];
}

/// "[2,3]" for messages.
inline std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

}  // namespace misc
}  // namespace mcc::backends::cpu
