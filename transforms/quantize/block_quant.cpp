// Block-wise weight quantization (see quantize/block_quant.h).
#include "transforms/quantize/block_quant.h"

#include <algorithm>
#include <cmath>

#include "ir/errors.h"

namespace mcc::transforms::quantize {

ir::DType BlockFormat::dtype() const {
  if (bits == 4) return zero_point ? ir::DType::U4 : ir::DType::I4;
  return zero_point ? ir::DType::U8 : ir::DType::I8;
}

int64_t BlockFormat::qmin() const {
  if (zero_point) return 0;
  return narrow ? -qmax() : -(int64_t{1} << (bits - 1));
}
int64_t BlockFormat::qmax() const { return zero_point ? (int64_t{1} << bits) - 1 : (int64_t{1} << (bits - 1)) - 1; }

namespace {

/// The parameters of range [lo, hi] (lo <= 0 <= hi) shrunk by `factor` (1: the full range);
/// symmetric blocks use amax / qmax, or amax / (qmax + 1) with `wide_negative` (the largest
/// magnitude lands on the extra negative code, as -8 of int4).
BlockParams range_params(float lo, float hi, double factor, bool wide_negative, const BlockFormat& f) {
  BlockParams p;
  if (!f.zero_point) {
    const double amax = std::max(-lo, hi) * factor;
    if (amax > 0) p.scale = static_cast<float>(amax / static_cast<double>(f.qmax() + (wide_negative ? 1 : 0)));
  } else if (hi > lo) {
    p.scale = static_cast<float>((static_cast<double>(hi) - lo) * factor / static_cast<double>(f.qmax()));
    const double z = std::nearbyint(-static_cast<double>(lo) * factor / static_cast<double>(p.scale));
    p.zero_point = static_cast<int32_t>(std::clamp<double>(z, 0, static_cast<double>(f.qmax())));
  }
  if (!(p.scale > 0) || !std::isfinite(p.scale)) p.scale = 1;  // subnormal ranges: codes stay near 0
  return p;
}

}  // namespace

BlockParams block_params(const float* x, int64_t n, int64_t stride, const BlockFormat& f) {
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i * stride];
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  BlockParams best = range_params(lo, hi, 1.0, false, f);
  if (!f.search) return best;
  auto sse = [&](const BlockParams& p) {
    double e = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i * stride];
      if (!std::isfinite(v)) continue;
      const double d = static_cast<double>(v) - static_cast<double>(static_cast<float>(block_code(v, p, f) - p.zero_point) * p.scale);
      e += d * d;
    }
    return e;
  };
  double best_err = sse(best);
  // Candidates in a fixed order; a later one wins only when strictly better.
  for (int step = 0; step <= kSearchSteps; ++step) {
    const double factor = 1.0 - 0.4 * step / kSearchSteps;
    for (bool wide : {false, true}) {
      if (wide && f.zero_point) continue;
      const BlockParams p = range_params(lo, hi, factor, wide, f);
      if (const double e = sse(p); e < best_err) {
        best = p;
        best_err = e;
      }
    }
  }
  return best;
}

int32_t block_code(float w, const BlockParams& p, const BlockFormat& f) {
  const double q = std::nearbyint(static_cast<double>(w) / static_cast<double>(p.scale)) + p.zero_point;
  if (std::isnan(q)) return p.zero_point;
  return static_cast<int32_t>(std::clamp<double>(q, static_cast<double>(f.qmin()), static_cast<double>(f.qmax())));
}

BlockQuantized rtn_quantize(const float* w, int64_t K, int64_t N, const BlockFormat& f) {
  BlockQuantized q;
  q.K = K;
  q.N = N;
  const int64_t blocks = (K + f.block_size - 1) / f.block_size;
  q.codes.resize(static_cast<size_t>(K * N));
  q.scale.resize(static_cast<size_t>(blocks * N));
  q.zero_point.resize(q.scale.size());
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t k0 = b * f.block_size, rows = std::min(f.block_size, K - k0);
    for (int64_t n = 0; n < N; ++n) {
      const BlockParams p = block_params(w + k0 * N + n, rows, N, f);
      q.scale[static_cast<size_t>(b * N + n)] = p.scale;
      q.zero_point[static_cast<size_t>(b * N + n)] = p.zero_point;
      for (int64_t k = k0; k < k0 + rows; ++k) q.codes[static_cast<size_t>(k * N + n)] = block_code(w[k * N + n], p, f);
    }
  }
  return q;
}

std::string pack_codes(const std::vector<int32_t>& codes, ir::DType dt) {
  if (dt == ir::DType::I8 || dt == ir::DType::U8) {
    std::string out(codes.size(), '\0');
    for (size_t i = 0; i < codes.size(); ++i) out[i] = static_cast<char>(static_cast<uint8_t>(codes[i] & 0xff));
    return out;
  }
  if (dt != ir::DType::I4 && dt != ir::DType::U4) throw InternalError("pack_codes: " + ir::dtype_name(dt));
  std::string out((codes.size() + 1) / 2, '\0');
  for (size_t i = 0; i < codes.size(); ++i) {
    const auto nib = static_cast<uint8_t>(codes[i] & 0x0f);
    out[i / 2] = static_cast<char>(static_cast<uint8_t>(out[i / 2]) | (i % 2 ? nib << 4 : nib));
  }
  return out;
}

void check_packed_codes(const std::string& bytes, ir::DType dt, int64_t count) {
  const bool four = dt == ir::DType::I4 || dt == ir::DType::U4;
  const size_t want = four ? static_cast<size_t>((count + 1) / 2) : static_cast<size_t>(count);
  if (bytes.size() != want)
    throw ModelError("holds " + std::to_string(bytes.size()) + " bytes of codes, expected " + std::to_string(want) +
                     " for " + std::to_string(count) + " " + ir::dtype_name(dt) + " values");
}

int32_t packed_code_at(const std::string& bytes, ir::DType dt, size_t i) {
  const bool four = dt == ir::DType::I4 || dt == ir::DType::U4;
  const bool is_signed = dt == ir::DType::I4 || dt == ir::DType::I8;
  int32_t v = four ? (static_cast<uint8_t>(bytes[i / 2]) >> (i % 2 ? 4 : 0)) & 0x0f : static_cast<uint8_t>(bytes[i]);
  if (is_signed && v >= (four ? 8 : 128)) v -= four ? 16 : 256;
  return v;
}

std::vector<int32_t> unpack_codes(const std::string& bytes, ir::DType dt, int64_t count) {
  check_packed_codes(bytes, dt, count);
  std::vector<int32_t> out(static_cast<size_t>(count));
  for (size_t i = 0; i < out.size(); ++i) out[i] = packed_code_at(bytes, dt, i);
  return out;
}

}  // namespace mcc::transforms::quantize
