// Device bodies of QuantizeLinear / DequantizeLinear (see quantize.h). The element types are
// runtime switches inside the kernel (uniform across a launch, so no divergence) instead of one
// instantiation per type combination.
#include "backends/cuda/kernels/quantize.h"

#include <cstdint>

#include "backends/cuda/runtime/launch.h"

namespace mcc::cuda {
namespace detail {

MCC_HD inline float load_as_float(const void* p, QuantElem t, int64_t i) {
  switch (t) {
    case QuantElem::U8: return static_cast<float>(static_cast<const uint8_t*>(p)[i]);
    case QuantElem::I8: return static_cast<float>(static_cast<const int8_t*>(p)[i]);
    case QuantElem::U16: return static_cast<float>(static_cast<const uint16_t*>(p)[i]);
    case QuantElem::I16: return static_cast<float>(static_cast<const int16_t*>(p)[i]);
    case QuantElem::I32: return static_cast<float>(static_cast<const int32_t*>(p)[i]);
    case QuantElem::F32: return static_cast<const float*>(p)[i];
    case QuantElem::F16: return to_float(static_cast<const half_t*>(p)[i]);
  }
  return 0.f;
}

/// Stores an integral value already within the type's range.
MCC_HD inline void store_int(void* p, QuantElem t, int64_t i, float q) {
  switch (t) {
    case QuantElem::U8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(q); break;
    case QuantElem::I8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(q); break;
    case QuantElem::U16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(q); break;
    case QuantElem::I16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(q); break;
    default: break;
  }
}

MCC_HD inline void int_range(QuantElem t, float* lo, float* hi) {
  switch (t) {
    case QuantElem::U8: *lo = 0.f; *hi = 255.f; break;
    case QuantElem::I8: *lo = -128.f; *hi = 127.f; break;
    case QuantElem::U16: *lo = 0.f; *hi = 65535.f; break;
    default: *lo = -32768.f; *hi = 32767.f; break;
  }
}

MCC_HD inline float round_half_even(float v) {
#if defined(MCC_CUDA_EMULATION)
  return std::nearbyint(v);
#else
  return rintf(v);
#endif
}

}  // namespace detail

void quantize_linear(const void* x, QuantElem x_type, const void* scale, QuantElem scale_type,
                     const void* zero_point, void* y, QuantElem y_type, const QuantLayout& layout) {
  float lo = 0.f, hi = 0.f;
  detail::int_range(y_type, &lo, &hi);
  const QuantLayout L = layout;
  for_each(L.count, [=] MCC_DEVICE(int64_t i) {
    const int64_t k = L.per_tensor ? 0 : (i / L.inner) % L.axis_len;
    const float zp = zero_point ? detail::load_as_float(zero_point, y_type, k) : 0.f;
    const float v = detail::load_as_float(x, x_type, i) / detail::load_as_float(scale, scale_type, k);
    float q = 0.f;
    if (v == v) {
      q = detail::round_half_even(v) + zp;
      q = q < lo ? lo : (q > hi ? hi : q);
    }
    detail::store_int(y, y_type, i, q);
  });
}

void dequantize_linear(const void* x, QuantElem x_type, const void* scale, QuantElem scale_type,
                       const void* zero_point, void* y, QuantElem y_type, const QuantLayout& layout) {
  const QuantLayout L = layout;
  for_each(L.count, [=] MCC_DEVICE(int64_t i) {
    const int64_t k = L.per_tensor ? 0 : (i / L.inner) % L.axis_len;
    const float zp = zero_point ? detail::load_as_float(zero_point, x_type, k) : 0.f;
    const float v = (detail::load_as_float(x, x_type, i) - zp) * detail::load_as_float(scale, scale_type, k);
    if (y_type == QuantElem::F16) static_cast<half_t*>(y)[i] = from_float<half_t>(v);
    else static_cast<float*>(y)[i] = v;
  });
}

}  // namespace mcc::cuda
