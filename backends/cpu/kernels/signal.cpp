// Signal-processing kernels.
//   HannWindow, HammingWindow, BlackmanWindow  opset 17 (periodic, output_datatype)
//   DFT              opset 17 (axis attribute, default 1) and 20 (axis input, default -2);
//                    dft_length input, onesided, inverse; real (last dim 1) or complex (last dim 2)
//                    input; inverse+onesided is the inverse real DFT (output last dim 1)
//   STFT             opset 17 (frame_step, optional window and frame_length, onesided)
//   MelWeightMatrix  opset 17 (output_datatype)
// dtypes: signals f32, f64, f16, bf16; sizes/lengths i32, i64; windows and mel matrices any
// numeric output_datatype. Accumulation: f64 (radix-2 FFT for power-of-two lengths, otherwise a
// direct O(n^2) sum with an exact twiddle table, so any length works).
// Not supported: nothing known.
#include <cmath>
#include <complex>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/misc_util.h"

namespace mcc::backends::cpu {
namespace {

using cplx = std::complex<double>;

// ---------------------------------------------------------------------------- windows

enum class WindowKind { Hann, Hamming, Blackman };

template <WindowKind K>
Kernel make_window(const ir::Node& node) {
  const bool periodic = node.attr_int("periodic", 1) != 0;
  const auto dt = static_cast<ir::DType>(node.attr_int("output_datatype", 1));
  if (!ir::info(dt).computable || dt == ir::DType::String)
    throw UnsupportedError(node.describe() + ": output_datatype " + ir::dtype_name(dt) + " not supported");
  return [periodic, dt](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const int64_t size = misc::scalar_i64(n, ctx.in(0), "size");
    if (size < 0) throw ModelError(n.describe() + ": size must be >= 0, got " + std::to_string(size));
    const double N = static_cast<double>(periodic ? size : size - 1);
    std::vector<double> w(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) {
      const double x = static_cast<double>(i);
      constexpr double pi = std::numbers::pi;
      if constexpr (K == WindowKind::Hann) {
        const double s = std::sin(x * pi / N);
        w[i] = s * s;
      } else if constexpr (K == WindowKind::Hamming) {
        constexpr double alpha = 25.0 / 46.0;
        w[i] = alpha - std::cos(x * pi * 2 / N) * (1 - alpha);
      } else {
        w[i] = 0.42 - 0.5 * std::cos(x * pi * 2 / N) + 0.08 * std::cos(x * pi * 4 / N);
      }
    }
    ir::Tensor& y = ctx.alloc_output(0, dt, {size});
    misc::write_f64(n, y, w, "output");
  };
}

// ---------------------------------------------------------------------------- DFT core

/// exp(sign * 2*pi*i*k/n) for k in [0, n).
std::vector<cplx> twiddles(int64_t n, double sign) {
  std::vector<cplx> t(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const double a = sign * 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
    t[k] = {std::cos(a), std::sin(a)};
  }
  return t;
}

/// Iterative radix-2 FFT of the zero-padded/truncated input (n a power of two).
void fft_pow2(const std::vector<cplx>& in, int64_t n, const std::vector<cplx>& tw, int64_t out_len, double scale,
              std::vector<cplx>& out) {
  std::vector<cplx> a(static_cast<size_t>(n), cplx{0, 0});
  const int64_t m = std::min<int64_t>(static_cast<int64_t>(in.size()), n);
  for (int64_t j = 0; j < m; ++j) a[j] = in[j];
  for (int64_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    const int64_t half = len / 2, step = n / len;
    for (int64_t s = 0; s < n; s += len)
      for (int64_t k = 0; k < half; ++k) {
        const cplx u = a[s + k], v = a[s + k + half] * tw[k * step];
        a[s + k] = u + v;
        a[s + k + half] = u - v;
      }
  }
  out.assign(static_cast<size_t>(out_len), cplx{0, 0});
  for (int64_t k = 0; k < out_len && k < n; ++k) out[k] = a[k] * scale;
}

/// out[k] = sum_{j < min(in_len, n)} in[j] * tw[j*k mod n], for k < out_len (radix-2 FFT when n
/// is a power of two, the direct sum otherwise).
void dft_direct(const std::vector<cplx>& in, int64_t n, const std::vector<cplx>& tw, int64_t out_len, double scale,
                std::vector<cplx>& out) {
  if (n >= 8 && (n & (n - 1)) == 0) return fft_pow2(in, n, tw, out_len, scale, out);
  const int64_t m = std::min<int64_t>(static_cast<int64_t>(in.size()), n);
  out.assign(static_cast<size_t>(out_len), cplx{0, 0});
  for (int64_t k = 0; k < out_len; ++k) {
    cplx acc{0, 0};
    int64_t idx = 0;
    for (int64_t j = 0; j < m; ++j) {
      acc += in[j] * tw[idx];
      idx += k;
      if (idx >= n) idx %= n;
    }
    out[k] = acc * scale;
  }
}

struct DftAttrs {
  bool inverse = false, onesided = false;
  int64_t axis_attr = 1;
  bool axis_is_input = false;
};

Kernel make_dft(const ir::Node& node) {
  DftAttrs a;
  a.inverse = node.attr_int("inverse", 0) != 0;
  a.onesided = node.attr_int("onesided", 0) != 0;
  a.axis_is_input = node.since_version >= 20;
  a.axis_attr = a.axis_is_input ? -2 : node.attr_int("axis", 1);
  return [a](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& xt = ctx.in(0);
    ir::dispatch<MCC_FLOAT_DTYPES>(xt.dtype(), n.describe() + ": input", [](auto) {});
    const int64_t R = static_cast<int64_t>(xt.rank());
    if (R < 2 || (xt.dims()[R - 1] != 1 && xt.dims()[R - 1] != 2))
      throw ModelError(n.describe() + ": input must be [..., 1] (real) or [..., 2] (complex), got " +
                       misc::dims_str(xt.dims()));
    int64_t axis = a.axis_attr;
    if (a.axis_is_input && ctx.has_input(2)) axis = misc::scalar_i64(n, ctx.in(2), "axis");
    axis = normalize_axis(n, axis, R);
    if (axis == R - 1) throw ModelError(n.describe() + ": axis must not be the last (real/imaginary) dimension");
    const int64_t L = xt.dims()[axis];
    int64_t len = a.inverse && a.onesided ? 2 * (L - 1) : L;
    if (ctx.has_input(1)) len = misc::scalar_i64(n, ctx.in(1), "dft_length");
    if (len <= 0) throw ModelError(n.describe() + ": dft_length must be > 0, got " + std::to_string(len));
    const int64_t cin = xt.dims()[R - 1];
    const bool irfft = a.inverse && a.onesided;
    const int64_t out_len = irfft ? len : a.onesided ? len / 2 + 1 : len;
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= xt.dims()[i];
    for (int64_t i = axis + 1; i < R - 1; ++i) inner *= xt.dims()[i];
    std::vector<int64_t> od = xt.dims();
    od[axis] = out_len;
    od[R - 1] = irfft ? 1 : 2;
    const std::vector<double> x = misc::read_f64(n, xt, "input");
    std::vector<double> y(static_cast<size_t>(outer * out_len * inner * od[R - 1]), 0.0);
    const std::vector<cplx> tw = twiddles(len, a.inverse ? 1.0 : -1.0);
    const double scale = a.inverse ? 1.0 / static_cast<double>(len) : 1.0;
    ctx.parallel_for(outer * inner, len * (L + out_len) * 4, [&](int64_t b0, int64_t b1) {
      std::vector<cplx> in, out;
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t o = b / inner, i = b % inner;
        in.resize(static_cast<size_t>(L));
        for (int64_t j = 0; j < L; ++j) {
          const size_t p = static_cast<size_t>(((o * L + j) * inner + i) * cin);
          in[j] = {x[p], cin == 2 ? x[p + 1] : 0.0};
        }
        if (irfft) {
          // Hermitian extension of the half spectrum; imaginary parts of DC/Nyquist are ignored.
          std::vector<cplx> full(static_cast<size_t>(len), cplx{0, 0});
          const int64_t half = len / 2;
          for (int64_t k = 0; k <= half && k < L; ++k) {
            full[k] = in[k];
            if (k > 0 && len - k != k) full[len - k] = std::conj(in[k]);
          }
          full[0] = {full[0].real(), 0.0};
          if (len % 2 == 0 && half < L) full[half] = {in[half].real(), 0.0};
          dft_direct(full, len, tw, len, scale, out);
          for (int64_t k = 0; k < len; ++k) y[static_cast<size_t>((o * out_len + k) * inner + i)] = out[k].real();
        } else {
          dft_direct(in, len, tw, out_len, scale, out);
          for (int64_t k = 0; k < out_len; ++k) {
            const size_t p = static_cast<size_t>(((o * out_len + k) * inner + i) * 2);
            y[p] = out[k].real();
            y[p + 1] = out[k].imag();
          }
        }
      }
    });
    ir::Tensor& yt = ctx.alloc_output(0, xt.dtype(), od);
    misc::write_f64(n, yt, y, "output");
  };
}

// ---------------------------------------------------------------------------- STFT

Kernel make_stft(const ir::Node& node) {
  const bool onesided = node.attr_int("onesided", 1) != 0;
  return [onesided](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& xt = ctx.in(0);
    ir::dispatch<MCC_FLOAT_DTYPES>(xt.dtype(), n.describe() + ": signal", [](auto) {});
    if (xt.rank() != 3 || (xt.dims()[2] != 1 && xt.dims()[2] != 2))
      throw ModelError(n.describe() + ": signal must be [batch, length, 1|2], got " + misc::dims_str(xt.dims()));
    const int64_t B = xt.dims()[0], L = xt.dims()[1], cin = xt.dims()[2];
    const int64_t step = misc::scalar_i64(n, ctx.in(1), "frame_step");
    std::vector<double> window;
    if (ctx.has_input(2)) window = misc::read_f64(n, ctx.in(2), "window");
    int64_t flen = ctx.has_input(2) ? static_cast<int64_t>(window.size()) : L;
    if (ctx.has_input(3)) flen = misc::scalar_i64(n, ctx.in(3), "frame_length");
    const int64_t wlen = ctx.has_input(2) ? static_cast<int64_t>(window.size()) : flen;
    if (window.empty()) window.assign(static_cast<size_t>(wlen), 1.0);
    if (step <= 0 || flen <= 0 || flen > L)
      throw ModelError(n.describe() + ": need frame_step > 0 and 0 < frame_length <= signal length");
    const int64_t frames = 1 + (L - flen) / step;
    const int64_t bins = onesided ? flen / 2 + 1 : flen;
    const std::vector<double> x = misc::read_f64(n, xt, "signal");
    std::vector<double> y(static_cast<size_t>(B * frames * bins * 2), 0.0);
    const std::vector<cplx> tw = twiddles(flen, -1.0);
    ctx.parallel_for(B * frames, flen * bins * 4, [&](int64_t q0, int64_t q1) {
      std::vector<cplx> in, out;
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t b = q / frames, f = q % frames;
        in.assign(static_cast<size_t>(wlen), cplx{0, 0});
        for (int64_t j = 0; j < wlen; ++j) {
          const int64_t t = f * step + j;
          if (t >= L) break;
          const size_t p = static_cast<size_t>((b * L + t) * cin);
          in[j] = cplx{x[p], cin == 2 ? x[p + 1] : 0.0} * window[j];
        }
        dft_direct(in, flen, tw, bins, 1.0, out);
        for (int64_t k = 0; k < bins; ++k) {
          const size_t p = static_cast<size_t>((q * bins + k) * 2);
          y[p] = out[k].real();
          y[p + 1] = out[k].imag();
        }
      }
    });
    ir::Tensor& yt = ctx.alloc_output(0, xt.dtype(), {B, frames, bins, 2});
    misc::write_f64(n, yt, y, "output");
  };
}

// ---------------------------------------------------------------------------- MelWeightMatrix

Kernel make_mel(const ir::Node& node) {
  const auto dt = static_cast<ir::DType>(node.attr_int("output_datatype", 1));
  if (!ir::info(dt).computable || dt == ir::DType::String)
    throw UnsupportedError(node.describe() + ": output_datatype " + ir::dtype_name(dt) + " not supported");
  return [dt](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const int64_t bins = misc::scalar_i64(n, ctx.in(0), "num_mel_bins");
    const int64_t dft_len = misc::scalar_i64(n, ctx.in(1), "dft_length");
    const int64_t rate = misc::scalar_i64(n, ctx.in(2), "sample_rate");
    const double lo = misc::scalar_f64(n, ctx.in(3), "lower_edge_hertz");
    const double hi = misc::scalar_f64(n, ctx.in(4), "upper_edge_hertz");
    if (bins <= 0 || dft_len <= 0 || rate <= 0 || lo < 0 || hi < lo)
      throw ModelError(n.describe() + ": need num_mel_bins, dft_length, sample_rate > 0 and 0 <= lower <= upper edge");
    const int64_t spec_bins = dft_len / 2 + 1;
    const double lo_mel = 2595.0 * std::log10(1.0 + lo / 700.0);
    const double hi_mel = 2595.0 * std::log10(1.0 + hi / 700.0);
    // The step divides by num_mel_bins + 2 points, as the reference definition does.
    const double step = (hi_mel - lo_mel) / static_cast<double>(bins + 2);
    std::vector<int64_t> fb(static_cast<size_t>(bins + 2));
    for (int64_t i = 0; i < bins + 2; ++i) {
      const double mel = static_cast<double>(i) * step + lo_mel;
      const double hz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
      fb[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft_len + 1) * hz / static_cast<double>(rate)));
    }
    std::vector<double> w(static_cast<size_t>(spec_bins * bins), 0.0);
    auto set = [&](int64_t j, int64_t i, double v) {
      if (j >= 0 && j < spec_bins) w[j * bins + i] = v;
    };
    for (int64_t i = 0; i < bins; ++i) {
      const int64_t l = fb[i], c = fb[i + 1], h = fb[i + 2];
      if (c == l) set(c, i, 1.0);
      else
        for (int64_t j = l; j <= c; ++j) set(j, i, static_cast<double>(j - l) / static_cast<double>(c - l));
      if (h > c)
        for (int64_t j = c; j < h; ++j) set(j, i, static_cast<double>(h - j) / static_cast<double>(h - c));
    }
    ir::Tensor& y = ctx.alloc_output(0, dt, {spec_bins, bins});
    misc::write_f64(n, y, w, "output");
  };
}

}  // namespace

void register_signal(KernelRegistry& r) {
  r.add("HannWindow", 17, 0, make_window<WindowKind::Hann>);
  r.add("HammingWindow", 17, 0, make_window<WindowKind::Hamming>);
  r.add("BlackmanWindow", 17, 0, make_window<WindowKind::Blackman>);
  r.add("DFT", 17, 0, make_dft);
  r.add("STFT", 17, 0, make_stft);
  r.add("MelWeightMatrix", 17, 0, make_mel);
}

}  // namespace mcc::backends::cpu
