// QDQ conv fusion (see qdq_conv_fusion.h): matching of the quantized group, weight packing and
// the zero-point correction at kernel creation, and the integer conv with its f32 epilogue.
// General convs: im2col (im2col_u8.cpp) into a packed u8 panel (padding reads the x zero point),
// u8 x s8 GEMM with the accumulators starting at -x_zero_point * sum(w row); maps of 2048
// positions or more in column chunks whose rows and panel stay in cache. The epilogue packs four
// vectors of quantized values into 64 bytes; its range clamps are left out where a bound on the
// accumulators shows the values stay small. Depthwise convs (one input channel per group, one output
// channel per group): (x - x_zero_point) and w are small integers held exactly in f32, so an f32
// direct loop gives the exact integer sums; 3x3/5x5 stride-1/2 ones run 16 channels per vector
// (qdq_depthwise_c16.cpp), the rest one channel at a time here. With a residual Add the conv part
// writes f32 and residual_add (qdq_residual_add.cpp) adds and quantizes.
#include "backends/cpu/kernels/qdq_conv_fusion.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>

#ifdef __AVX512F__
#include <immintrin.h>

#include "backends/cpu/kernels/qdq_epilogue_avx512.h"
#endif

#include "backends/cpu/kernels/conv_fusion.h"
#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/im2col_u8.h"
#include "backends/cpu/kernels/int8_gemm.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/qdq_depthwise_c16.h"
#include "backends/cpu/kernels/qdq_residual_add.h"
#include "backends/fusion_match.h"
#include "ir/errors.h"
#include "ir/op_attrs.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;

// Constant scale (f32) and zero point of a Q/DQ node, as floats; empty when not constant.
struct QParams {
  std::vector<float> scale, zp;  // zp has scale's size (zeros when absent)
  DType zp_dtype = DType::U8;
  int64_t axis = 1;
};

std::optional<QParams> qparams(const ir::Node& q) {
  if (q.attr_int("block_size", 0) != 0 || q.inputs.size() < 2) return std::nullopt;
  const ir::Tensor* s = constant_of(q.inputs[1], DType::F32);
  if (!s || s->rank() > 1) return std::nullopt;
  QParams p;
  p.axis = q.attr_int("axis", 1);
  auto sv = s->data<float>();
  p.scale.assign(sv.begin(), sv.end());
  p.zp.assign(p.scale.size(), 0.f);
  const ir::Value* zv = q.inputs.size() > 2 ? q.inputs[2] : nullptr;
  if (zv) {
    const ir::Tensor* z = nullptr;
    for (DType dt : {DType::U8, DType::I8, DType::I32})
      if ((z = constant_of(zv, dt))) break;
    if (!z || z->numel() != s->numel()) return std::nullopt;
    p.zp_dtype = z->dtype();
    for (int64_t i = 0; i < z->numel(); ++i)
      p.zp[static_cast<size_t>(i)] = z->dtype() == DType::U8   ? static_cast<float>(z->data<uint8_t>()[i])
                                     : z->dtype() == DType::I8 ? static_cast<float>(z->data<int8_t>()[i])
                                                               : static_cast<float>(z->data<int32_t>()[i]);
  }
  return p;
}

// The DequantizeLinear producing v, when it is one in the same graph.
const ir::Node* dq_producer(const ir::Value* v) {
  if (!v || !v->producer || v->producer->owner != v->owner) return nullptr;
  const ir::Node* p = v->producer;
  return p->is("DequantizeLinear") && p->domain.empty() && one_output(*p) && p->attr_int("output_dtype", 0) == 0 ? p
                                                                                                                : nullptr;
}

// Per-channel values of size n from a size-1 or size-n vector.
std::vector<float> widen(const std::vector<float>& v, int64_t n) {
  return v.size() == 1 ? std::vector<float>(static_cast<size_t>(n), v[0]) : v;
}

struct QConv {
  const ir::Node* conv = nullptr;
  WindowAttrs attrs;
  int64_t group = 1, M = 0, cg = 0, kk = 0;  // kk: taps per input channel
  std::vector<int64_t> wdims;
  bool depthwise = false;
  std::vector<float> xs, xz;      // size 1 or C
  std::vector<PackedS8> packed;   // per group (general path)
  std::vector<float> wf;          // depthwise: w as f32 [M][kk]
  std::vector<float> dw_xz, dw_scale;  // depthwise: x zero point, x_scale * w_scale per channel
  std::vector<int8_t> dw_taps;    // depthwise 3x3 / 5x5: qdq_depthwise_c16_taps
  std::vector<int32_t> dw_neg_corr;
  std::vector<float> sc;          // per output channel: x_scale * w_scale (general path)
  std::vector<float> ws;          // per output channel w scale
  std::vector<float> bias;        // per output channel, empty when absent
  Epilogue ep;
  bool quant_out = false;
  DType out_dt = DType::F32;
  std::vector<float> ys, yz;      // size M
  std::vector<float> ys_inv;      // 1 / ys (the SIMD epilogue multiplies by it)
  std::vector<std::vector<int32_t>> acc_init;  // per group (general path): -x_zero * sum(w row)
  bool quant_clamp = true;        // the output quantization may leave the s32 range (see quant_clamp_needed)
  bool silu_in_range = false;     // every SiLU input provably within its exp clamp (conv_output_bound)
  // A residual Add after the activation (then the conv part writes f32 and res quantizes).
  bool residual = false;
  ResidualAdd res;
  bool res_zp_given = false;  // the residual DequantizeLinear has a zero point (which types r)
};

// Stores one output row of nc values: f32 epilogue (bias, activation), then quantization.
void finish_row(const QConv& q, int64_t oc, float* tmp, int64_t nc, std::byte* out_base, int64_t off) {
  apply_epilogue<float>(tmp, 1, nc, nc, q.bias.empty() ? nullptr : &q.bias[static_cast<size_t>(oc)], q.ep);
  const size_t c = static_cast<size_t>(oc);
  if (!q.quant_out) std::memcpy(reinterpret_cast<float*>(out_base) + off, tmp, static_cast<size_t>(nc) * sizeof(float));
  else if (q.out_dt == DType::U8) quantize_row_u8(tmp, nc, q.ys[c], q.yz[c], reinterpret_cast<uint8_t*>(out_base) + off, true);
  else quantize_row_s8(tmp, nc, q.ys[c], q.yz[c], reinterpret_cast<int8_t*>(out_base) + off, true);
}

#ifdef __AVX512F__
// R output rows (channels oc0 .. oc0 + R - 1, stored row_stride apart from off) of nc positions
// from 16-lane loads load(r, j, mask) of the scaled accumulators plus bias: the activation, then
// stored as f32 or quantized (x / y_scale as x * (1 / y_scale), round half to even, saturate;
// NaN -> 0). 64 positions of each row (4R vectors) at a time, their activations interleaved.
template <Epilogue::Act Act, bool Clamp, bool InRange, int R, class Load>
void finish_rows_act(const QConv& q, int64_t oc0, int64_t nc, Load load, std::byte* out_base, int64_t off,
                     int64_t row_stride) {
  // Lanes of positions [j + 16t, j + 16t + 16) below nc: bits 16t.. of mask64(j).
  auto mask64 = [nc](int64_t j) { return nc - j >= 64 ? ~__mmask64{0} : (__mmask64{1} << (nc - j)) - 1; };
  auto mask = [](__mmask64 m, int t) { return static_cast<__mmask16>(m >> (16 * t)); };
  __m512 inv[R];
  __m512i z[R];
  for (int r = 0; r < R; ++r) {
    const size_t c = static_cast<size_t>(oc0 + r);
    inv[r] = _mm512_set1_ps(q.quant_out ? q.ys_inv[c] : 1.f);
    z[r] = _mm512_set1_epi32(q.quant_out ? static_cast<int32_t>(q.yz[c]) : 0);
  }
  const bool u8 = q.out_dt == DType::U8;
  auto pass = [&]<bool Quant>() {  // one instantiation per output kind
    for (int64_t j = 0; j < nc; j += 64) {
      const __mmask64 m = mask64(j);
      __m512 v[4 * R];
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < 4; ++t) v[4 * r + t] = load(r, j + 16 * t, mask(m, t));
      avx512::qdq_act16_n<Act, 4 * R, InRange>(v, q.ep);
      for (int r = 0; r < R; ++r) {
        const int64_t at = off + r * row_stride + j;
        if constexpr (Quant) {
          __m512i qv[4];
          for (int t = 0; t < 4; ++t) qv[t] = avx512::qdq_round16<Clamp>(v[4 * r + t], inv[r], z[r], u8);
          avx512::qdq_store64(reinterpret_cast<uint8_t*>(out_base) + at, qv, u8, nc - j);  // s8: the same bytes
        } else {
          for (int t = 0; t < 4 && j + 16 * t < nc; ++t)
            _mm512_mask_storeu_ps(reinterpret_cast<float*>(out_base) + at + 16 * t, mask(m, t), v[4 * r + t]);
        }
      }
    }
  };
  if (q.quant_out) pass.template operator()<true>();
  else pass.template operator()<false>();
}

template <int R, class Load>
void finish_rows_simd(const QConv& q, int64_t oc0, int64_t nc, Load load, std::byte* out_base, int64_t off,
                      int64_t row_stride) {
  avx512::with_qdq_epilogue(q.ep, q.quant_clamp, q.silu_in_range, [&]<Epilogue::Act Act, bool Clamp, bool InRange>() {
    finish_rows_act<Act, Clamp, InRange, R>(q, oc0, nc, load, out_base, off, row_stride);
  });
}
#endif

// Output positions per column chunk of the general path, or 0 for one panel of the whole map.
// Large maps run chunk by chunk: a chunk's im2col rows and packed panel (about 128 KiB each)
// stay in the core's cache while its GEMM reads them, and the chunks are the parallel items.
int64_t chunk_width(int64_t kp, int64_t P) {
  if (P < 2048) return 0;
  const int64_t cap = std::max<int64_t>(64, (131072 / kp) / 64 * 64);
  return std::min(cap, std::max<int64_t>(256, ((P + 7) / 8 + 63) / 64 * 64));
}

void run_general(KernelContext& ctx, const QConv& q, const ConvProblem& p, const uint8_t* x, std::byte* out) {
  const WindowGeom& g = p.g;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], P = OH * OW;
  const int64_t K = q.cg * q.kk;
  const int64_t Mg = q.M / q.group;
  const int64_t kp = q.packed[0].kp;
  const uint8_t xz = static_cast<uint8_t>(q.xz[0]);
  const bool direct = q.kk == 1 && g.stride[1] == 1 && g.stride[2] == 1 && g.pad_b[1] == 0 && g.pad_b[2] == 0 &&
                      OH == H && OW == W;
  constexpr int64_t kRows = 128;  // output channels per GEMM call
  // Output channels [m0, m1) of group gi at the nc (<= 64) positions [j0, j0 + nc) of sample n,
  // whose packed columns start at b (panel width np): GEMM, then the epilogue row by row.
  auto block = [&](int64_t n, int64_t gi, int64_t m0, int64_t m1, const uint8_t* b, int64_t np, int64_t j0,
                   int64_t nc, int32_t* acc0) {
    const PackedS8& a = q.packed[static_cast<size_t>(gi)];
    // The accumulators start at -x_zero * sum(w row): they end at sum(w * (x - x_zero)).
    gemm_u8s8(a, m0, m1, b, np, nc, acc0, 64, q.acc_init[static_cast<size_t>(gi)].data());
#ifdef __AVX512F__
    if (int8_simd_enabled()) {
      // Two rows at a time: eight interleaved activation chains.
      for (int64_t m = m0; m < m1; m += 2) {
        const int64_t oc = gi * Mg + m;
        __m512 sv[2], bv[2];
        for (int r = 0; r < 2 && m + r < m1; ++r) {
          sv[r] = _mm512_set1_ps(q.sc[static_cast<size_t>(oc + r)]);
          bv[r] = _mm512_set1_ps(q.bias.empty() ? 0.f : q.bias[static_cast<size_t>(oc + r)]);
        }
        const int32_t* ar = acc0 + (m - m0) * 64;
        auto load = [&](int r, int64_t j, __mmask16 mk) {
          return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(mk, ar + r * 64 + j)), sv[r], bv[r]);
        };
        const int64_t off = (n * q.M + oc) * P + j0;
        if (m + 1 < m1) finish_rows_simd<2>(q, oc, nc, load, out, off, P);
        else finish_rows_simd<1>(q, oc, nc, load, out, off, P);
      }
      return;
    }
#endif
    for (int64_t m = m0; m < m1; ++m) {
      const int64_t oc = gi * Mg + m;
      const float s = q.sc[static_cast<size_t>(oc)];
      const int32_t* ar = acc0 + (m - m0) * 64;
      float tmp[64];
      for (int64_t j = 0; j < nc; ++j) tmp[j] = static_cast<float>(ar[j]) * s;
      finish_row(q, oc, tmp, nc, out, (n * q.M + oc) * P + j0);
    }
  };
  // Packs positions [p0, p0 + cnt) of the im2col matrix (rows [k4 * 4, k4 * 4 + 4) for k4 in
  // [q0, q1)) into panel (width np, column 0 = p0); rows is scratch for 4 * cnt bytes.
  auto pack = [&](const uint8_t* xg, int64_t q0, int64_t q1, int64_t p0, int64_t cnt, uint8_t* rows,
                  uint8_t* panel, int64_t np) {
    for (int64_t k4 = q0; k4 < q1; ++k4) {
      const uint8_t* r[4];
      for (int i = 0; i < 4; ++i) {
        const int64_t k = k4 * 4 + i;
        if (k >= K) r[i] = nullptr;
        else if (direct) r[i] = xg + k * P + p0;
        else {
          im2col_u8_row(g, q.kk, xg, xz, k, p0, cnt, rows + i * cnt);
          r[i] = rows + i * cnt;
        }
      }
      interleave4(r, cnt, panel + k4 * 4 * np);
    }
  };
  static thread_local std::vector<int32_t> acc_buf;  // kept per thread across runs
  static thread_local std::vector<uint8_t> panel_buf, rows_buf;
  auto scratch = [](std::vector<uint8_t>& v, int64_t n) {
    if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
    return v.data();
  };
  auto acc = []() {
    if (acc_buf.size() < static_cast<size_t>(kRows * 64)) acc_buf.resize(static_cast<size_t>(kRows * 64));
    return acc_buf.data();
  };
  const int64_t cw = chunk_width(kp, P);
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t gi = 0; gi < q.group; ++gi) {
      const uint8_t* xg = x + (n * p.c + gi * q.cg) * H * W;
      if (cw > 0) {
        // Column chunks as the parallel items, each packed into this thread's panel.
        const int64_t chunks = (P + cw - 1) / cw;
        ctx.parallel_for(chunks, Mg * kp * cw, [&](int64_t c0, int64_t c1) {
          uint8_t* const panel = scratch(panel_buf, kp * cw);
          uint8_t* const rows = scratch(rows_buf, 4 * cw);
          int32_t* const acc0 = acc();
          for (int64_t c = c0; c < c1; ++c) {
            const int64_t p0 = c * cw, cnt = std::min(cw, P - p0);
            pack(xg, 0, kp / 4, p0, cnt, rows, panel, cw);
            for (int64_t j = 0; j < cnt; j += 64)
              for (int64_t m0 = 0; m0 < Mg; m0 += kRows)
                block(n, gi, m0, std::min(Mg, m0 + kRows), panel + j * 4, cw, p0 + j, std::min<int64_t>(64, cnt - j), acc0);
          }
        });
        continue;
      }
      // Small maps: one panel of the whole map, packed by k-quads in parallel; then items of 64
      // columns x up to kRows output channels, so a 7x7 map (one column block) still splits
      // across threads. Each output is computed by one item whatever the thread count.
      const int64_t NP = panel_width(P);
      uint8_t* const panel = scratch(panel_buf, kp * NP);
      ctx.parallel_for(kp / 4, P * (direct ? 1 : 2), [&](int64_t q0, int64_t q1) {
        pack(xg, q0, q1, 0, P, scratch(rows_buf, 4 * P), panel, NP);
      });
      const int64_t nblocks = (P + 63) / 64, mchunks = (Mg + kRows - 1) / kRows;
      ctx.parallel_for(nblocks * mchunks, std::min(Mg, kRows) * kp * 64, [&](int64_t i0, int64_t i1) {
        int32_t* const acc0 = acc();
        for (int64_t item = i0; item < i1; ++item) {
          const int64_t b = item / mchunks, m0 = (item % mchunks) * kRows, j0 = b * 64;
          block(n, gi, m0, std::min(Mg, m0 + kRows), panel + j0 * 4, NP, j0, std::min<int64_t>(64, P - j0), acc0);
        }
      });
    }
  }
}

void run_depthwise(KernelContext& ctx, const QConv& q, const ConvProblem& p, const uint8_t* x, std::byte* out) {
  const WindowGeom& g = p.g;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], P = OH * OW;
  const int64_t KH = g.k[1], KW = g.k[2];
  const int64_t sh = g.stride[1], sw = g.stride[2], dh = g.dil[1], dw = g.dil[2];
  const int64_t pt = g.pad_b[1], pl = g.pad_b[2];
  const int64_t Hp = std::max(H + pt, (OH - 1) * sh + (KH - 1) * dh + 1);
  // Columns are split into sw phases (plane r holds padded columns r, r + sw, ...), so every tap
  // reads a contiguous run: padded column ow * sw + kw * dw is phase (kw * dw) % sw, index
  // ow + (kw * dw) / sw.
  const int64_t Wq = (std::max(W + pl, (OW - 1) * sw + (KW - 1) * dw + 1) + sw - 1) / sw;
  // Offset of each tap's first read in the phase planes (64-bit divisions stay out of the loops).
  std::vector<int64_t> tap_off(static_cast<size_t>(q.kk));
  for (int64_t kh = 0; kh < KH; ++kh)
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t t = kw * dw;
      tap_off[static_cast<size_t>(kh * KW + kw)] = ((t % sw) * Hp + kh * dh) * Wq + t / sw;
    }
  // Column phases of the input: iw0 = first iw with (iw + pl) % sw == r, cnt columns from there.
  struct Phase {
    int64_t iw0, cnt, plane_off;
  };
  std::vector<Phase> phases;
  for (int64_t r = 0; r < sw; ++r) {
    const int64_t iw0 = ((r - pl) % sw + sw) % sw;
    if (iw0 < W) phases.push_back({iw0, (W - iw0 + sw - 1) / sw, r * Hp * Wq + (iw0 + pl) / sw});
  }
  ctx.parallel_for(p.n * q.M, Hp * Wq * sw + P * q.kk * 2, [&](int64_t c0, int64_t c1) {
    static thread_local std::vector<float> plane_buf, acc_buf;
    if (plane_buf.size() < static_cast<size_t>(sw * Hp * Wq)) plane_buf.resize(static_cast<size_t>(sw * Hp * Wq));
    if (acc_buf.size() < static_cast<size_t>(P)) acc_buf.resize(static_cast<size_t>(P));
    // Plain pointers: every access to a thread_local may go through the TLS lookup.
    float* const plane = plane_buf.data();
    float* const acc = acc_buf.data();
    // The padding of the planes stays zero between channels of the same geometry (only the
    // interior is rewritten), so the planes are cleared only when the geometry changes.
    static thread_local std::array<int64_t, 7> geom_key{};
    const std::array<int64_t, 7> key{H, W, Hp, Wq, sw, pt, pl};
    bool cleared = false;
    if (geom_key != key) {
      geom_key = key;
      cleared = true;
    }
    (void)cleared;
    for (int64_t nc = c0; nc < c1; ++nc) {
      const int64_t c = nc % q.M;
      const size_t ci = q.xz.size() == 1 ? 0 : static_cast<size_t>(c);
      const float z = q.xz[ci];
      std::fill(plane, plane + sw * Hp * Wq, 0.f);
      const uint8_t* xc = x + nc * H * W;
      for (int64_t ih = 0; ih < H; ++ih) {
        const uint8_t* src = xc + ih * W;
        if (sw == 1) {
          float* dst = plane + (ih + pt) * Wq + pl;
          for (int64_t iw = 0; iw < W; ++iw) dst[iw] = static_cast<float>(src[iw]) - z;
        } else {
          int64_t done = 0;  // columns pairs handled by the SIMD split below (stride 2)
#ifdef __AVX512F__
          if (sw == 2 && phases.size() == 2 && int8_simd_enabled()) {
            // 16 column pairs at a time: the low byte of each u16 to one phase, the high byte to
            // the other.
            // Pair j is (src[2j], src[2j + 1]): entry j of the phase starting at iw 0 and of the
            // phase starting at iw 1.
            const bool first_even = phases[0].iw0 == 0;
            float* d0 = plane + phases[first_even ? 0 : 1].plane_off + (ih + pt) * Wq;
            float* d1 = plane + phases[first_even ? 1 : 0].plane_off + (ih + pt) * Wq;
            const uint8_t* sp = src;
            const int64_t pairs = W / 2;
            const __m512 zv = _mm512_set1_ps(z);
            const __m512i lo8 = _mm512_set1_epi32(0xFF);
            for (; done + 16 <= pairs; done += 16) {
              const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sp + 2 * done)));
              _mm512_storeu_ps(d0 + done, _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_and_si512(w, lo8)), zv));
              _mm512_storeu_ps(d1 + done, _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(w, 8)), zv));
            }
          }
#endif
          for (const Phase& ph : phases) {
            float* dst = plane + ph.plane_off + (ih + pt) * Wq;
            const uint8_t* sp = src + ph.iw0;
            for (int64_t j = done; j < ph.cnt; ++j) dst[j] = static_cast<float>(sp[j * sw]) - z;
          }
        }
      }
      if (q.kk > 64) std::fill(acc, acc + P, 0.f);  // the tap-by-tap path accumulates
      const float* wc = q.wf.data() + c * q.kk;
      const bool small = q.kk <= 64;  // the tap offsets fit in registers' worth of pointers
      int64_t oh = 0;
#ifdef __AVX512F__
      if (small && int8_simd_enabled()) {
        // Four output rows at a time, one 16-column block each: four independent FMA chains.
        const int64_t rs = sh * Wq;  // plane offset between consecutive output rows
        for (; oh < OH; oh += 4) {
          const int64_t nr = std::min<int64_t>(4, OH - oh);
          const float* base = plane + oh * rs;
          for (int64_t ow = 0; ow < OW; ow += 16) {
            const __mmask16 mk = OW - ow >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (OW - ow)) - 1);
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (int64_t k = 0; k < q.kk; ++k) {
              const __m512 wv = _mm512_set1_ps(wc[k]);
              const float* t = base + tap_off[static_cast<size_t>(k)] + ow;
              a0 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mk, t), a0);
              if (nr > 1) a1 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mk, t + rs), a1);
              if (nr > 2) a2 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mk, t + 2 * rs), a2);
              if (nr > 3) a3 = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mk, t + 3 * rs), a3);
            }
            float* ar = acc + oh * OW + ow;
            _mm512_mask_storeu_ps(ar, mk, a0);
            if (nr > 1) _mm512_mask_storeu_ps(ar + OW, mk, a1);
            if (nr > 2) _mm512_mask_storeu_ps(ar + 2 * OW, mk, a2);
            if (nr > 3) _mm512_mask_storeu_ps(ar + 3 * OW, mk, a3);
          }
        }
      }
#endif
      for (; oh < OH; ++oh) {
        float* __restrict ar = acc + oh * OW;
        if (small) {
          for (int64_t ow = 0; ow < OW; ++ow) {
            float a = 0.f;
            for (int64_t k = 0; k < q.kk; ++k) a += wc[k] * plane[oh * sh * Wq + tap_off[static_cast<size_t>(k)] + ow];
            ar[ow] = a;
          }
          continue;
        }
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t row = oh * sh + kh * dh;
          for (int64_t kw = 0; kw < KW; ++kw) {
            const float wv = wc[kh * KW + kw];
            const int64_t t = kw * dw;
            const float* __restrict src = plane + ((t % sw) * Hp + row) * Wq + t / sw;
            for (int64_t ow = 0; ow < OW; ++ow) ar[ow] += wv * src[ow];
          }
        }
      }
      const float s = q.xs[ci] * q.ws[static_cast<size_t>(c)];
#ifdef __AVX512F__
      if (int8_simd_enabled()) {
        const __m512 sv = _mm512_set1_ps(s);
        const __m512 bv = _mm512_set1_ps(q.bias.empty() ? 0.f : q.bias[static_cast<size_t>(c)]);
        finish_rows_simd<1>(q, c, P, [&](int, int64_t j, __mmask16 mk) { return _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, acc + j), sv, bv); },
                            out, nc * P, P);
        continue;
      }
#endif
      for (int64_t i = 0; i < P; ++i) acc[i] *= s;
      finish_row(q, c, acc, P, out, nc * P);
    }
  });
}

// A bound on |conv output| (before the activation) of channel c: sum(w * (x - x_zero)) lies in
// [-(P * x_zero + N * (255 - x_zero)), P * (255 - x_zero) + N * x_zero] with P the sum of the
// positive weights and N of the negative ones' magnitudes; times |scale|, plus |bias|.
double conv_output_bound(const QConv& q, const int8_t* w, int64_t c) {
  const int64_t K = q.cg * q.kk;
  const size_t i = static_cast<size_t>(c);
  double pos = 0.0, neg = 0.0;
  for (int64_t k = 0; k < K; ++k) (w[c * K + k] > 0 ? pos : neg) += std::abs(static_cast<double>(w[c * K + k]));
  const double xz = q.depthwise ? q.dw_xz[i] : q.xz[0];
  const double scale = q.depthwise ? q.dw_scale[i] : q.sc[i];
  const double sum = std::max(pos * (255.0 - xz) + neg * xz, pos * xz + neg * (255.0 - xz));
  return sum * std::abs(scale) + (q.bias.empty() ? 0.0 : std::abs(q.bias[i]));
}

// Whether the output quantization needs the clamps that keep round(v / y_scale) inside the s32
// range. Not when every finite value it can see is provably small: the conv output bound, which
// the activation keeps (or shrinks). NaN needs no clamp (see qdq_round16).
bool quant_clamp_needed(const QConv& q, const int8_t* w) {
  if (!q.quant_out) return false;
  using A = Epilogue::Act;
  for (int64_t c = 0; c < q.M; ++c) {
    double v = conv_output_bound(q, w, c);
    switch (q.ep.act) {
      case A::Sigmoid:
      case A::HardSigmoid: v = 1.0; break;  // within [0, 1] (or NaN)
      case A::Clip:
        if (std::isfinite(q.ep.alpha) && std::isfinite(q.ep.beta))
          v = std::min(v, std::max<double>(std::abs(q.ep.alpha), std::abs(q.ep.beta)));
        break;
      case A::LeakyRelu: v *= std::max(1.0, std::abs(static_cast<double>(q.ep.alpha))); break;
      default: break;  // None, Relu, SiLU, HardSwish: |act(v)| <= |v|
    }
    // 1% for the activations' approximations; NaN or infinite bounds keep the clamps.
    if (!(v * 1.01 * std::abs(static_cast<double>(q.ys_inv[static_cast<size_t>(c)])) < 1e8)) return true;
  }
  return false;
}

// Whether every SiLU input lies inside silu_ps_n's exp clamp [-87.3, 88.7], so the kernels may
// leave the clamp out (1% for the f32 rounding of the scaled sums).
bool silu_in_range(const QConv& q, const int8_t* w) {
  if (q.ep.act != Epilogue::Act::SiLU) return false;
  for (int64_t c = 0; c < q.M; ++c)
    if (!(conv_output_bound(q, w, c) * 1.01 < 87.3)) return false;
  return true;
}

// The conv and its activation (and output quantization unless there is a residual) into out.
void run_conv(KernelContext& ctx, const QConv& q, const ConvProblem& p, const uint8_t* x, std::byte* out) {
  if (!q.depthwise) {
    run_general(ctx, q, p, x, out);
    return;
  }
  QdqDepthwise d;
  d.w = q.wf.data();
  d.x_zero = q.dw_xz.data();
  d.scale = q.dw_scale.data();
  d.bias = q.bias.empty() ? nullptr : q.bias.data();
  d.ep = q.ep;
  d.quant_out = q.quant_out;
  d.out_u8 = q.out_dt == DType::U8;
  d.y_scale = q.ys.data();
  d.y_zero = q.yz.data();
  d.quant_clamp = q.quant_clamp;
  d.silu_in_range = q.silu_in_range;
  d.y_inv = q.ys_inv.data();
  if (!q.dw_taps.empty()) {
    d.taps = q.dw_taps.data();
    d.taps_k = static_cast<int>(q.wdims[2]);
    d.neg_corr = q.dw_neg_corr.data();
  }
  if (!qdq_depthwise_c16(ctx, p, d, x, out)) run_depthwise(ctx, q, p, x, out);
}

// The conv with a residual Add (and QuantizeLinear): the activated conv output in f32 (in the
// f32 output itself, or in a per-thread buffer), then residual_add; an r that broadcasts
// instead runs as the Add kernel would (its dims decide the output's).
void run_with_residual(KernelContext& ctx, const QConv& q, const ConvProblem& p, const uint8_t* x,
                       const std::vector<int64_t>& out_dims) {
  const ir::Node& nd = *q.conv;
  const ir::Tensor& rt = ctx.in(1);
  if ((rt.dtype() != DType::U8 && rt.dtype() != DType::I8) ||
      (q.res_zp_given && rt.dtype() != (q.res.r_u8 ? DType::U8 : DType::I8)))
    throw ModelError(nd.describe() + ": the residual's DequantizeLinear input must be u8 or s8 as its zero point");
  ResidualAdd ra = q.res;
  ra.r_u8 = rt.dtype() == DType::U8;
  const DType out_dt = !ra.quant_out ? DType::F32 : ra.out_u8 ? DType::U8 : DType::I8;
  int64_t n = 1;
  for (int64_t d : out_dims) n *= d;
  static thread_local std::vector<float> act_buf;  // kept per thread across runs
  if (rt.dims() == out_dims && !ra.quant_out) {
    ir::Tensor& y = ctx.alloc_output_overwritten(0, out_dt, out_dims);
    run_conv(ctx, q, p, x, y.mutable_raw());
    residual_add(ctx, ra, y.data<float>().data(), rt.raw(), n, y.mutable_raw());
    return;
  }
  if (act_buf.size() < static_cast<size_t>(n)) act_buf.resize(static_cast<size_t>(n));
  float* const act = act_buf.data();
  run_conv(ctx, q, p, x, reinterpret_cast<std::byte*>(act));
  if (rt.dims() == out_dims) {
    ir::Tensor& y = ctx.alloc_output_overwritten(0, out_dt, out_dims);
    residual_add(ctx, ra, act, rt.raw(), n, y.mutable_raw());
    return;
  }
  const std::vector<int64_t> dims = broadcast_shapes(nd, out_dims, rt.dims());
  std::vector<float> r(static_cast<size_t>(rt.numel()));
  if (ra.r_u8) dequantize_row_u8(rt.data<uint8_t>().data(), rt.numel(), ra.r_scale, ra.r_zero, r.data());
  else dequantize_row_s8(rt.data<int8_t>().data(), rt.numel(), ra.r_scale, ra.r_zero, r.data());
  int64_t m = 1;
  for (int64_t d : dims) m *= d;
  std::vector<float> sum(static_cast<size_t>(m));
  for_each_broadcast(dims, {broadcast_strides(out_dims, dims), broadcast_strides(rt.dims(), dims)},
                     [&](int64_t i, int64_t a, int64_t b, int64_t) { sum[static_cast<size_t>(i)] = act[a] + r[static_cast<size_t>(b)]; });
  ir::Tensor& y = ctx.alloc_output_overwritten(0, out_dt, dims);
  if (!ra.quant_out) std::copy(sum.begin(), sum.end(), y.mutable_data<float>().data());
  else if (ra.out_u8) quantize_row_u8(sum.data(), m, ra.y_scale, ra.y_zero, y.mutable_data<uint8_t>().data());
  else quantize_row_s8(sum.data(), m, ra.y_scale, ra.y_zero, y.mutable_data<int8_t>().data());
}

Kernel make_kernel(std::shared_ptr<const QConv> q) {
  return [q](KernelContext& ctx) {
    const ir::Node& nd = *q->conv;
    const ir::Tensor& xt = ctx.in(0);
    if (xt.dtype() != DType::U8) throw ModelError(nd.describe() + ": quantized X must be u8");
    if (q->xs.size() != 1 && (xt.rank() < 2 || static_cast<int64_t>(q->xs.size()) != xt.dims()[1]))
      throw ModelError(nd.describe() + ": x scale does not match the channels of X");
    const uint8_t* x = xt.data<uint8_t>().data();
    const ConvProblem p = conv_problem(nd, q->attrs, q->group, xt.dims(), q->wdims);
    const std::vector<int64_t> out_dims = p.g.out_dims(p.n, p.m);
    if (q->residual) {
      run_with_residual(ctx, *q, p, x, out_dims);
      return;
    }
    ir::Tensor& y = ctx.alloc_output_overwritten(0, q->quant_out ? q->out_dt : DType::F32, out_dims);
    run_conv(ctx, *q, p, x, y.mutable_raw());
  };
}

}  // namespace

std::optional<FusedKernel> fuse_qdq_conv(const ir::Node& n) {
  if (!n.domain.empty() || !one_output(n)) return std::nullopt;
  const ir::Node* conv = nullptr;
  const ir::Node* xdq = nullptr;
  bool reads_quantized_x = false;  // starts at the Conv: reads the u8 x the DequantizeLinear reads
  if (n.is("DequantizeLinear")) {
    if (n.inputs.empty() || !n.inputs[0] || n.inputs[0]->initializer || dq_producer(n.outputs[0]) != &n) return std::nullopt;
    const ir::Node* r = only_reader(n.outputs[0]);
    if (!r || !r->is("Conv") || !r->domain.empty() || r->inputs.empty() || r->inputs[0] != n.outputs[0]) return std::nullopt;
    for (size_t i = 1; i < r->inputs.size(); ++i)
      if (r->inputs[i] == n.outputs[0]) return std::nullopt;
    conv = r;
    xdq = &n;
  } else if (n.is("Conv")) {
    if (n.inputs.empty()) return std::nullopt;
    xdq = dq_producer(n.inputs[0]);
    if (!xdq || only_reader(n.inputs[0]) == &n) return std::nullopt;  // the DequantizeLinear start covers it
    if (!xdq->inputs[0]) return std::nullopt;
    conv = &n;
    reads_quantized_x = true;
  } else {
    return std::nullopt;
  }
  if (!one_output(*conv) || conv->inputs.size() < 2 || !conv->inputs[1]) return std::nullopt;
  auto q = std::make_shared<QConv>();
  q->conv = conv;
  // x: u8 with constant per-tensor (or per-channel) scale and zero point.
  auto xp = qparams(*xdq);
  if (!xp || xp->zp_dtype != DType::U8) return std::nullopt;
  if (xdq->inputs.size() < 3 && xdq->inputs[0]->dtype != DType::U8) return std::nullopt;
  // w: DequantizeLinear of a constant s8 [M, C/G, kh, kw] with zero zero points.
  const ir::Node* wdq = dq_producer(conv->inputs[1]);
  if (!wdq) return std::nullopt;
  const ir::Tensor* w = constant_of(wdq->inputs[0], DType::I8);
  if (!w || w->rank() != 4) return std::nullopt;
  auto wp = qparams(*wdq);
  if (!wp || wp->zp_dtype == DType::U8) return std::nullopt;
  for (float z : wp->zp)
    if (z != 0.f) return std::nullopt;
  const int64_t M = w->dims()[0];
  if (wp->scale.size() != 1 && !(static_cast<int64_t>(wp->scale.size()) == M && (wp->axis == 0 || wp->axis == -4)))
    return std::nullopt;
  q->wdims = w->dims();
  q->M = M;
  q->group = ir::ConvAttrs(*conv).group();
  if (q->group < 1 || M % q->group != 0) return std::nullopt;
  q->cg = w->dims()[1];
  q->kk = w->dims()[2] * w->dims()[3];
  q->depthwise = q->cg == 1 && M == q->group;
  if (xp->scale.size() != 1) {
    const bool axis1 = xp->axis == 1 || xp->axis == -3;
    if (!q->depthwise || !axis1 || static_cast<int64_t>(xp->scale.size()) != M) return std::nullopt;
  }
  q->xs = xp->scale;
  q->xz = xp->zp;
  q->ws = widen(wp->scale, M);
  // b: absent, a constant f32, or DequantizeLinear of a constant s32.
  if (conv->inputs.size() > 2 && conv->inputs[2]) {
    const ir::Value* bv = conv->inputs[2];
    if (const ir::Tensor* bf = constant_of(bv, DType::F32)) {
      if (bf->numel() != M) return std::nullopt;
      auto d = bf->data<float>();
      q->bias.assign(d.begin(), d.end());
    } else {
      const ir::Node* bdq = dq_producer(bv);
      const ir::Tensor* bi = bdq ? constant_of(bdq->inputs[0], DType::I32) : nullptr;
      auto bp = bdq ? qparams(*bdq) : std::nullopt;
      if (!bi || bi->numel() != M || !bp || (bp->scale.size() != 1 && static_cast<int64_t>(bp->scale.size()) != M))
        return std::nullopt;
      const auto bs = widen(bp->scale, M), bz = widen(bp->zp, M);
      q->bias.resize(static_cast<size_t>(M));
      for (int64_t c = 0; c < M; ++c) {
        const size_t i = static_cast<size_t>(c);
        q->bias[i] = (static_cast<float>(bi->data<int32_t>()[i]) - bz[i]) * bs[i];
      }
    }
  }
  // The activation and the output QuantizeLinear.
  FusedKernel fk;
  if (xdq == &n) fk.absorbed.push_back(conv);
  if (reads_quantized_x) fk.inputs = {xdq->inputs[0]};
  const ir::Value* v = conv->outputs[0];
  if (auto m = match_activation(v, DType::F32)) {
    using A = ActivationMatch::Act;
    using E = Epilogue::Act;
    static const E kMap[] = {E::Relu, E::Clip, E::Sigmoid, E::SiLU, E::LeakyRelu, E::HardSigmoid, E::HardSwish};
    static_assert(static_cast<int>(A::HardSwish) == 6);
    q->ep.act = kMap[static_cast<int>(m->act)];
    q->ep.alpha = m->alpha;
    q->ep.beta = m->beta;
    for (const ir::Node* a : m->nodes) fk.absorbed.push_back(a);
    v = m->nodes.back()->outputs[0];
  }
  // A residual Add whose other input is a per-tensor DequantizeLinear of a u8/s8 tensor: the
  // kernel reads that tensor (fk.inputs[1]) and adds it after the activation.
  const ir::Value* residual_q = nullptr;
  if (const ir::Node* add = only_reader(v); add && add->is("Add") && add->domain.empty() && one_output(*add) &&
                                            add->inputs.size() == 2 && add->inputs[0] != add->inputs[1]) {
    const ir::Value* other = add->inputs[0] == v ? add->inputs[1] : add->inputs[0];
    const ir::Node* rdq = dq_producer(other);
    auto rp = rdq ? qparams(*rdq) : std::nullopt;
    const ir::Value* rq = rdq ? rdq->inputs[0] : nullptr;
    if (rp && rp->scale.size() == 1 && (rp->zp_dtype == DType::U8 || rp->zp_dtype == DType::I8) && rq &&
        !rq->initializer) {
      q->residual = true;
      q->res.r_scale = rp->scale[0];
      q->res.r_zero = rp->zp[0];
      q->res.r_u8 = rp->zp_dtype == DType::U8;
      q->res_zp_given = rdq->inputs.size() >= 3 && rdq->inputs[2];
      residual_q = rq;
      fk.absorbed.push_back(add);
      v = add->outputs[0];
    }
  }
  if (const ir::Node* qn = only_reader(v);
      qn && qn->is("QuantizeLinear") && qn->domain.empty() && one_output(*qn) && qn->inputs[0] == v &&
      qn->attr_int("output_dtype", 0) == 0) {
    auto yp = qparams(*qn);
    const bool per_c = yp && static_cast<int64_t>(yp->scale.size()) == M && (yp->axis == 1 || yp->axis == -3);
    if (q->residual && yp && yp->scale.size() == 1 && (yp->zp_dtype == DType::U8 || yp->zp_dtype == DType::I8)) {
      q->res.quant_out = true;  // the residual pass quantizes (per tensor); the conv part stays f32
      q->res.out_u8 = yp->zp_dtype == DType::U8;
      q->res.y_scale = yp->scale[0];
      q->res.y_zero = yp->zp[0];
      fk.absorbed.push_back(qn);
      v = qn->outputs[0];
    } else if (!q->residual && yp && (yp->scale.size() == 1 || per_c) &&
               (yp->zp_dtype == DType::U8 || yp->zp_dtype == DType::I8)) {
      q->quant_out = true;
      q->out_dt = yp->zp_dtype;
      q->ys = widen(yp->scale, M);
      for (float sc : q->ys) q->ys_inv.push_back(1.f / sc);
      q->yz = widen(yp->zp, M);
      fk.absorbed.push_back(qn);
      v = qn->outputs[0];
    }
  }
  fk.output = v;
  if (q->residual) fk.inputs = {xdq->inputs[0], residual_q};
  q->attrs = WindowAttrs::parse(*conv);
  if (q->attrs.kernel_shape.size() > 0 && q->attrs.kernel_shape.size() != 2) return std::nullopt;
  // Weights: exact integers in f32 (depthwise) or packed s8 per group (general).
  const int8_t* wd = w->data<int8_t>().data();
  if (q->depthwise) {
    q->wf.resize(static_cast<size_t>(M * q->kk));
    for (size_t i = 0; i < q->wf.size(); ++i) q->wf[i] = static_cast<float>(wd[i]);
    q->dw_xz = widen(q->xz, M);
    q->dw_scale.resize(static_cast<size_t>(M));
    for (int64_t c = 0; c < M; ++c) {
      const size_t i = static_cast<size_t>(c);
      q->dw_scale[i] = q->xs[q->xs.size() == 1 ? 0 : i] * q->ws[i];
    }
    const int64_t k = q->wdims[2];
    if (q->wdims[3] == k && (k == 3 || k == 5)) {  // the sizes the channels-in-lanes kernel runs
      q->dw_taps = qdq_depthwise_c16_taps(q->wf.data(), M, static_cast<int>(k));
      q->dw_neg_corr = qdq_depthwise_c16_neg_corr(q->wf.data(), q->dw_xz.data(), M, static_cast<int>(k));
    }
  } else {
    const int64_t Mg = M / q->group, K = q->cg * q->kk;
    for (int64_t gi = 0; gi < q->group; ++gi) {
      q->packed.push_back(pack_s8(wd + gi * Mg * K, Mg, K));
      std::vector<int32_t>& init = q->acc_init.emplace_back();
      for (int32_t rs : q->packed.back().row_sum) init.push_back(-static_cast<int32_t>(q->xz[0]) * rs);
    }
    q->sc.resize(static_cast<size_t>(M));
    for (int64_t c = 0; c < M; ++c) q->sc[static_cast<size_t>(c)] = q->xs[0] * q->ws[static_cast<size_t>(c)];
  }
  q->quant_clamp = quant_clamp_needed(*q, wd);
  q->silu_in_range = silu_in_range(*q, wd);
  fk.kernel = make_kernel(std::move(q));
  return fk;
}

}  // namespace mcc::backends::cpu
