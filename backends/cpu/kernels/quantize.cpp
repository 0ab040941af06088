// Linear quantization kernels.
//   QuantizeLinear    opsets 10-28: x f32|f16|bf16|i32, y_scale f32|f16|bf16, y_zero_point
//                     u8|i8|u16|i16|u4|i4|u2|i2|f8e4m3fn|f8e4m3fnuz|f8e5m2|f8e5m2fnuz|f4e2m1 (or
//                     output_dtype); per-tensor, per-axis and blocked (block_size) scales;
//                     round half to even, saturating (float8: saturate attribute).
//   DequantizeLinear  opsets 10-28: x any of the quantized types above or i32, scale f32|f16|bf16;
//                     output dtype = scale dtype or output_dtype (f32|f16|bf16).
//   DynamicQuantizeLinear opset 11: x f32 -> u8, f32 scale, u8 zero point.
// Arithmetic is done in f32 (the scale's precision for f32/f16/bf16 scales); int32 inputs are
// converted to f32. f32 <-> u8/i8 (and i32 -> f32) with per-tensor or per-axis scales run through
// the row codecs of int8_gemm.h (AVX-512). A DequantizeLinear whose inputs are all constants
// (quantized weights) is computed once per kernel and its result reused, unless the run keeps no
// weight copies (then once per run). 4-bit types are packed
// two per byte, 2-bit types (opset 25) four per byte,
// lowest bits first. Not supported: float8e8m0 and float6 types, the `precision` attribute other
// than f32-or-narrower (the division is always f32).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>

#include "backends/cpu/kernels/control_kernels.h"
#include "backends/cpu/kernels/int8_gemm.h"
#include "backends/cpu/kernels/kernel_util.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;

// ---------------------------------------------------------------- small float formats

// A small float format (float8/float4): exponent and mantissa widths, bias, and how it encodes
// NaN/Inf. Codes are decoded through a table and encoded by a nearest-value search with ties to
// the even code, which is round-half-to-even.
struct MiniFloat {
  int bits, exp_bits, man_bits, bias;
  bool has_inf;     // e5m2: IEEE-like inf/NaN at the top exponent
  bool nan_0x80;    // fnuz: 0x80 is the only NaN, there is no negative zero
  bool no_nan;      // f4e2m1: every code is finite
  std::array<float, 256> value{};  // decoded values of all codes
  int max_code = 0;                // largest finite positive code
  float max_value = 0;

  MiniFloat(int b, int e, int m, int bi, bool inf, bool fnuz, bool nonan)
      : bits(b), exp_bits(e), man_bits(m), bias(bi), has_inf(inf), nan_0x80(fnuz), no_nan(nonan) {
    const int n = 1 << bits;
    const int sign_bit = 1 << (bits - 1);
    for (int c = 0; c < n; ++c) value[c] = decode_bits(c, sign_bit);
    for (int c = 0; c < sign_bit; ++c)
      if (std::isfinite(value[c])) max_code = c;
    max_value = value[max_code];
  }
  float decode_bits(int c, int sign_bit) const {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    if (nan_0x80 && c == sign_bit) return nan;
    const bool neg = c & sign_bit;
    const int mag = c & (sign_bit - 1);
    const int e = mag >> man_bits, m = mag & ((1 << man_bits) - 1);
    const int emax = (1 << exp_bits) - 1;
    float v;
    if (has_inf && e == emax) v = m == 0 ? std::numeric_limits<float>::infinity() : nan;
    else if (!has_inf && !nan_0x80 && !no_nan && mag == sign_bit - 1) v = nan;  // e4m3fn: S.1111.111
    else if (e == 0) v = std::ldexp(static_cast<float>(m), 1 - bias - man_bits);
    else v = std::ldexp(1.f + static_cast<float>(m) / static_cast<float>(1 << man_bits), e - bias);
    return neg ? -v : v;
  }
  uint8_t nan_code() const { return nan_0x80 ? 0x80 : static_cast<uint8_t>((1 << (bits - 1)) - 1); }
  uint8_t encode(float x, bool saturate) const {
    const int sign_bit = 1 << (bits - 1);
    if (std::isnan(x)) return no_nan ? 0 : nan_code();
    const bool neg = std::signbit(x);
    float a = std::fabs(x);
    int code;
    if (a > max_value) {
      const float ulp = max_value - value[max_code - 1];
      const float mid = max_value + ulp / 2;
      const bool to_max = saturate || no_nan || a < mid || (a == mid && (max_code % 2 == 0));
      if (to_max) code = max_code;
      else if (has_inf) code = max_code + 1;           // +inf
      else return nan_code();                          // fn/fnuz overflow -> NaN
    } else {
      // Largest code with value <= a (values of 0..max_code are increasing).
      int lo = 0, hi = max_code;
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (value[mid] <= a) lo = mid; else hi = mid - 1;
      }
      code = lo;
      if (lo < max_code) {
        const float dl = a - value[lo], dh = value[lo + 1] - a;
        if (dh < dl || (dh == dl && (lo % 2 == 1))) code = lo + 1;
      }
    }
    if (neg && !(nan_0x80 && code == 0)) code |= sign_bit;
    return static_cast<uint8_t>(code);
  }
};

const MiniFloat* minifloat_for(DType dt) {
  static const MiniFloat e4m3fn(8, 4, 3, 7, false, false, false);
  static const MiniFloat e4m3fnuz(8, 4, 3, 8, false, true, false);
  static const MiniFloat e5m2(8, 5, 2, 15, true, false, false);
  static const MiniFloat e5m2fnuz(8, 5, 2, 16, false, true, false);
  static const MiniFloat f4e2m1(4, 2, 1, 1, false, false, true);
  // Storage-only formats (no C++ type, so not part of dispatch<>): pick the format table.
  if (dt == DType::F8E4M3FN) return &e4m3fn;
  if (dt == DType::F8E4M3FNUZ) return &e4m3fnuz;
  if (dt == DType::F8E5M2) return &e5m2;
  if (dt == DType::F8E5M2FNUZ) return &e5m2fnuz;
  if (dt == DType::F4E2M1) return &f4e2m1;
  return nullptr;
}

// ---------------------------------------------------------------- quantized element codecs

// Reads/writes element i of a quantized buffer as float. Integer codecs round half to even and
// saturate; 4-bit types are packed two per byte, low nibble first. The load/store functions are
// picked once per node, so the per-element loops do not branch on the dtype.
struct QCodec;
using LoadFn = float (*)(const QCodec&, const std::byte*, int64_t);
// v: x already divided by the scale; zp: the zero point as float.
using StoreFn = void (*)(const QCodec&, std::byte*, int64_t, float v, float zp, bool saturate);

struct QCodec {
  const MiniFloat* mf = nullptr;
  bool packed = false;
  float lo = 0, hi = 0;  // integer range
  LoadFn load_fn = nullptr;
  StoreFn store_fn = nullptr;
  float load(const std::byte* p, int64_t i) const { return load_fn(*this, p, i); }
  void store(std::byte* p, int64_t i, float v, float zp, bool saturate) const { store_fn(*this, p, i, v, zp, saturate); }
};

float saturate_int(const QCodec& c, float v, float zp) {
  if (std::isnan(v)) return 0.f;
  return std::min(std::max(std::nearbyint(v) + zp, c.lo), c.hi);
}

template <class T>
float load_int(const QCodec&, const std::byte* p, int64_t i) {
  T v;
  std::memcpy(&v, p + sizeof(T) * i, sizeof(T));
  return static_cast<float>(v);
}
template <class T>
void store_int(const QCodec& c, std::byte* p, int64_t i, float v, float zp, bool) {
  const T q = static_cast<T>(saturate_int(c, v, zp));
  std::memcpy(p + sizeof(T) * i, &q, sizeof(T));
}

// Code i of `Bits` bits in a packed run, lowest bits first.
template <int Bits>
int packed_code(const std::byte* p, int64_t i) {
  constexpr int kPerByte = 8 / Bits, kMask = (1 << Bits) - 1;
  return (static_cast<int>(p[i / kPerByte]) >> ((i % kPerByte) * Bits)) & kMask;
}
template <int Bits>
void set_packed_code(std::byte* p, int64_t i, int code) {
  constexpr int kPerByte = 8 / Bits, kMask = (1 << Bits) - 1;
  const int sh = static_cast<int>(i % kPerByte) * Bits;
  p[i / kPerByte] = static_cast<std::byte>((static_cast<int>(p[i / kPerByte]) & ~(kMask << sh)) | ((code & kMask) << sh));
}
template <int Bits, bool Signed>
float load_packed_int(const QCodec&, const std::byte* p, int64_t i) {
  const int v = packed_code<Bits>(p, i);
  return static_cast<float>(Signed && v >= (1 << (Bits - 1)) ? v - (1 << Bits) : v);
}
template <int Bits>
void store_packed_int(const QCodec& c, std::byte* p, int64_t i, float v, float zp, bool) {
  set_packed_code<Bits>(p, i, static_cast<int>(saturate_int(c, v, zp)));
}
float load_f8(const QCodec& c, const std::byte* p, int64_t i) { return c.mf->value[static_cast<uint8_t>(p[i])]; }
// Float8 quantization ignores the zero point, as the ONNX reference does.
void store_f8(const QCodec& c, std::byte* p, int64_t i, float v, float, bool saturate) {
  p[i] = static_cast<std::byte>(c.mf->encode(v, saturate));
}
float load_f4(const QCodec& c, const std::byte* p, int64_t i) { return c.mf->value[packed_code<4>(p, i)]; }
void store_f4(const QCodec& c, std::byte* p, int64_t i, float v, float zp, bool) {
  set_packed_code<4>(p, i, c.mf->encode(v + zp, true));
}

QCodec codec_for(const ir::Node& n, DType dt, bool allow_i32) {
  QCodec c;
  c.mf = minifloat_for(dt);
  if (dt == DType::F4E2M1) {
    c.packed = true; c.load_fn = load_f4; c.store_fn = store_f4;
  } else if (c.mf) {
    c.load_fn = load_f8; c.store_fn = store_f8;
  } else if (dt == DType::U4 || dt == DType::I4) {
    const bool s = dt == DType::I4;
    c.packed = true; c.lo = s ? -8.f : 0.f; c.hi = s ? 7.f : 15.f;
    c.load_fn = s ? load_packed_int<4, true> : load_packed_int<4, false>;
    c.store_fn = store_packed_int<4>;
  } else if (dt == DType::U2 || dt == DType::I2) {
    const bool s = dt == DType::I2;
    c.packed = true; c.lo = s ? -2.f : 0.f; c.hi = s ? 1.f : 3.f;
    c.load_fn = s ? load_packed_int<2, true> : load_packed_int<2, false>;
    c.store_fn = store_packed_int<2>;
  } else if (dt == DType::I32 && !allow_i32) {
    throw UnsupportedError(n.describe() + ": " + n.op_type + " to int32 is not supported");
  } else {
    ir::dispatch<DType::U8, DType::I8, DType::U16, DType::I16, DType::I32>(
        dt, n.describe() + ": " + n.op_type + " quantized type (also u4, i4, u2, i2, f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f4e2m1)",
        [&](auto tag) {
          using T = typename decltype(tag)::type;
          c.lo = static_cast<float>(std::numeric_limits<T>::min());
          c.hi = std::is_same_v<T, int32_t> ? 2147483520.f : static_cast<float>(std::numeric_limits<T>::max());
          c.load_fn = load_int<T>;
          c.store_fn = store_int<T>;
        });
  }
  return c;
}

// ---------------------------------------------------------------- scale layout

// How the scale (and zero point) maps onto x: per-tensor, per-axis along `axis`, or blocked along
// `axis` with `block` elements per scale. x is viewed as [outer, len, inner].
struct ScaleLayout {
  int64_t outer = 1, len = 1, inner = 1, block = 0, slen = 1;
  bool per_tensor = true;

  // Scale offset of x element (o, a, i) and the scale stride along i.
  int64_t base(int64_t o, int64_t a) const {
    if (per_tensor) return 0;
    if (block == 0) return a;
    return (o * slen + a / block) * inner;
  }
  int64_t inner_step() const { return !per_tensor && block > 0 ? 1 : 0; }
};

ScaleLayout scale_layout(const ir::Node& n, const std::vector<int64_t>& xd, const ir::Tensor& scale,
                         int64_t axis_attr, int64_t block_size) {
  ScaleLayout L;
  for (int64_t d : xd) L.len *= d;
  const auto& sd = scale.dims();
  // A one-element scale (scalar or [1]) is per-tensor; so is any scale of a rank-0/1 input
  // whose scale has one element.
  if (block_size == 0 && scale.numel() == 1 && sd.size() <= 1) return L;
  const int64_t rank = static_cast<int64_t>(xd.size());
  if (rank == 0) throw ModelError(n.describe() + ": a non-scalar scale needs an input of rank >= 1");
  const int64_t axis = normalize_axis(n, axis_attr, rank);
  L.per_tensor = false;
  L.outer = 1; L.inner = 1;
  for (int64_t i = 0; i < axis; ++i) L.outer *= xd[i];
  for (int64_t i = axis + 1; i < rank; ++i) L.inner *= xd[i];
  L.len = xd[axis];
  if (block_size > 0) {
    if (static_cast<int64_t>(sd.size()) != rank)
      throw ModelError(n.describe() + ": blocked quantization needs a scale of the input's rank");
    for (int64_t i = 0; i < rank; ++i)
      if (i != axis && sd[i] != xd[i])
        throw ModelError(n.describe() + ": blocked scale shape does not match the input outside the axis");
    L.slen = sd[axis];
    const int64_t need = (L.len + block_size - 1) / block_size;
    if (L.slen != need)
      throw ModelError(n.describe() + ": blocked scale has " + std::to_string(L.slen) + " entries on axis " +
                       std::to_string(axis) + ", expected " + std::to_string(need));
    L.block = block_size;
  } else {
    if (sd.size() != 1 || sd[0] != L.len)
      throw ModelError(n.describe() + ": per-axis scale must be 1-D of length " + std::to_string(L.len) +
                       " (axis " + std::to_string(axis) + ")");
  }
  return L;
}

// Runs f(x_offset, count, scale_offset, scale_step) over every run of x sharing one layout row,
// split across threads by rows (packed outputs run serially: two elements share a byte).
template <class F>
void for_each_run(KernelContext& ctx, const ScaleLayout& L, bool serial, F&& f) {
  const int64_t rows = L.outer * L.len;
  auto body = [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t o = r / L.len, a = r % L.len;
      f(r * L.inner, L.inner, L.base(o, a), L.inner_step());
    }
  };
  if (serial) body(0, rows);
  else ctx.parallel_for(rows, L.inner * 4, body);
}

// Runs f(x_offset, count, scale_offset) over spans of x sharing one scale (not blocked layouts):
// a per-tensor scale is one span split across threads, per-axis scales give one span per row.
template <class F>
void for_each_span(KernelContext& ctx, const ScaleLayout& L, F&& f) {
  if (L.per_tensor) {
    ctx.parallel_for(L.len, 4, [&](int64_t b, int64_t e) { f(b, e - b, int64_t{0}); });
    return;
  }
  for_each_run(ctx, L, false, [&](int64_t off, int64_t cnt, int64_t so, int64_t) { f(off, cnt, so); });
}

std::vector<float> read_zero_point(const ir::Node& n, KernelContext& ctx, size_t idx, const QCodec& c,
                                   int64_t expect_numel) {
  std::vector<float> zp;
  if (!ctx.has_input(idx)) return zp;
  const ir::Tensor& z = ctx.in(idx);
  if (z.numel() != expect_numel)
    throw ModelError(n.describe() + ": zero point has " + std::to_string(z.numel()) +
                     " elements, the scale has " + std::to_string(expect_numel));
  zp.resize(static_cast<size_t>(z.numel()));
  for (int64_t i = 0; i < z.numel(); ++i) zp[i] = c.load(z.raw(), i);
  return zp;
}

// ---------------------------------------------------------------- QuantizeLinear

Kernel make_quantize(const ir::Node& node) {
  const int64_t axis = node.attr_int("axis", 1);
  const bool saturate = node.attr_int("saturate", 1) != 0;
  const int64_t block = node.attr_int("block_size", 0);
  const int64_t out_attr = node.attr_int("output_dtype", 0);
  if (block < 0) throw ModelError(node.describe() + ": block_size must be >= 0");
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const ir::Tensor& s = ctx.in(1);
    DType qt = out_attr ? static_cast<DType>(out_attr) : DType::U8;
    if (ctx.has_input(2)) {
      const DType zt = ctx.in(2).dtype();
      if (out_attr && zt != qt)
        throw ModelError(n.describe() + ": output_dtype and the zero point's dtype differ");
      qt = zt;
    }
    const QCodec c = codec_for(n, qt, false);
    const ScaleLayout L = scale_layout(n, x.dims(), s, axis, block);
    const auto scale = read_float_tensor(n, s, "y_scale");
    const auto zp = read_zero_point(n, ctx, 2, c, s.numel());
    // Sub-byte codes are OR-ed into their bytes: those outputs start from zeros.
    ir::Tensor& y = ir::info(qt).bits < 8 ? ctx.alloc_output(0, qt, x.dims()) : ctx.alloc_output_overwritten(0, qt, x.dims());
    std::byte* yp = y.mutable_raw();
    ir::dispatch<DType::F32, DType::F16, DType::BF16, DType::I32>(x.dtype(), n.describe() + ": QuantizeLinear x", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xp = x.data<T>().data();
      if constexpr (std::is_same_v<T, float>) {
        if ((qt == DType::U8 || qt == DType::I8) && L.block == 0) {
          for_each_span(ctx, L, [&](int64_t off, int64_t cnt, int64_t so) {
            const float z = zp.empty() ? 0.f : zp[so];
            if (qt == DType::U8) quantize_row_u8(xp + off, cnt, scale[so], z, reinterpret_cast<uint8_t*>(yp) + off);
            else quantize_row_s8(xp + off, cnt, scale[so], z, reinterpret_cast<int8_t*>(yp) + off);
          });
          return;
        }
      }
      for_each_run(ctx, L, c.packed, [&](int64_t off, int64_t cnt, int64_t so, int64_t step) {
        for (int64_t i = 0; i < cnt; ++i) {
          const int64_t k = so + i * step;
          const float z = zp.empty() ? 0.f : zp[k];
          c.store(yp, off + i, static_cast<float>(xp[off + i]) / scale[k], z, saturate);
        }
      });
    });
  };
}

// ---------------------------------------------------------------- DequantizeLinear

// True when v is an initializer no feed can replace, or a Constant node's output.
bool is_constant(const ir::Value* v) {
  if (!v) return true;
  if (v->initializer) return !v->is_graph_input;
  return v->producer && v->producer->is("Constant") && v->producer->owner == v->owner;
}

// The output of a node with constant inputs, computed on the first run.
struct ConstantCache {
  std::mutex mu;
  std::optional<ir::Tensor> value;
};

Kernel make_dequantize(const ir::Node& node) {
  const int64_t axis = node.attr_int("axis", 1);
  const int64_t block = node.attr_int("block_size", 0);
  const int64_t out_attr = node.attr_int("output_dtype", 0);
  if (block < 0) throw ModelError(node.describe() + ": block_size must be >= 0");
  bool constant = true;
  for (const ir::Value* v : node.inputs) constant = constant && is_constant(v);
  std::shared_ptr<ConstantCache> cache = constant ? std::make_shared<ConstantCache>() : nullptr;
  return [=](KernelContext& ctx) {
    // Large models run lean (ExecOptions::keep_weight_copies): the weight is dequantized per run.
    const bool keep = cache && ctx.keeps_weight_copies() && ctx.backend().device().is_host();
    ConstantCache* const kept = keep ? cache.get() : nullptr;
    std::unique_lock<std::mutex> lock;
    if (kept) {
      lock = std::unique_lock<std::mutex>(kept->mu);
      if (kept->value) {
        ctx.set_output(0, *kept->value);
        return;
      }
    }
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    const ir::Tensor& s = ctx.in(1);
    const QCodec c = codec_for(n, x.dtype(), true);
    if (ctx.has_input(2) && ctx.in(2).dtype() != x.dtype())
      throw ModelError(n.describe() + ": zero point dtype " + ir::dtype_name(ctx.in(2).dtype()) +
                       " differs from x dtype " + ir::dtype_name(x.dtype()));
    const ScaleLayout L = scale_layout(n, x.dims(), s, axis, block);
    const auto scale = read_float_tensor(n, s, "x_scale");
    const auto zp = read_zero_point(n, ctx, 2, c, s.numel());
    const DType yt = out_attr ? static_cast<DType>(out_attr) : s.dtype();
    ir::Tensor& y = ctx.alloc_output_overwritten(0, yt, x.dims());
    const std::byte* xp = x.raw();
    const DType xt = x.dtype();
    if (yt == DType::F32 && L.block == 0 && (xt == DType::U8 || xt == DType::I8 || xt == DType::I32)) {
      float* yp = y.mutable_data<float>().data();
      for_each_span(ctx, L, [&](int64_t off, int64_t cnt, int64_t so) {
        const float z = zp.empty() ? 0.f : zp[so];
        if (xt == DType::U8) dequantize_row_u8(reinterpret_cast<const uint8_t*>(xp) + off, cnt, scale[so], z, yp + off);
        else if (xt == DType::I8) dequantize_row_s8(reinterpret_cast<const int8_t*>(xp) + off, cnt, scale[so], z, yp + off);
        else dequantize_row_s32(reinterpret_cast<const int32_t*>(xp) + off, cnt, scale[so], z, yp + off);
      });
      if (kept) kept->value = y;
      return;
    }
    ir::dispatch<DType::F32, DType::F16, DType::BF16>(yt, n.describe() + ": DequantizeLinear output", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* yp = y.mutable_data<T>().data();
      for_each_run(ctx, L, false, [&](int64_t off, int64_t cnt, int64_t so, int64_t step) {
        for (int64_t i = 0; i < cnt; ++i) {
          const int64_t k = so + i * step;
          const float z = zp.empty() ? 0.f : zp[k];
          yp[off + i] = static_cast<T>((c.load(xp, off + i) - z) * scale[k]);
        }
      });
    });
    if (kept) kept->value = y;
  };
}

// ---------------------------------------------------------------- DynamicQuantizeLinear

void dynamic_quantize(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& x = ctx.in(0);
  if (x.dtype() != DType::F32)
    throw UnsupportedError(n.describe() + ": DynamicQuantizeLinear: dtype " + ir::dtype_name(x.dtype()) +
                           " not supported; supported: f32");
  const auto xs = x.data<float>();
  float mn = 0.f, mx = 0.f;
  for (float v : xs) { mn = std::min(mn, v); mx = std::max(mx, v); }
  const float scale = (mx == mn ? 1.f : mx - mn) / 255.f;
  const float zpf = std::nearbyint(std::min(255.f, std::max(0.f, 0.f - mn / scale)));
  ir::Tensor& y = ctx.alloc_output(0, DType::U8, x.dims());
  uint8_t* yp = y.mutable_data<uint8_t>().data();
  ctx.parallel_for(x.numel(), 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float q = std::nearbyint(xs[i] / scale) + zpf;
      yp[i] = static_cast<uint8_t>(std::min(255.f, std::max(0.f, q)));
    }
  });
  if (ctx.wants_output(1)) ctx.set_output(1, ir::Tensor::scalar<float>(scale));
  if (ctx.wants_output(2)) ctx.set_output(2, ir::Tensor::scalar<uint8_t>(static_cast<uint8_t>(zpf)));
}

}  // namespace

void register_quantize(KernelRegistry& r) {
  r.add("QuantizeLinear", 10, 0, make_quantize);
  r.add("DequantizeLinear", 10, 0, make_dequantize);
  r.add("DynamicQuantizeLinear", 11, 0, stateless(dynamic_quantize));
}

}  // namespace mcc::backends::cpu
