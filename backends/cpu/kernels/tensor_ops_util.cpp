// Byte-generic data movement for the tensor-op kernels (see tensor_ops_util.h).
#include "backends/cpu/kernels/cpu_isa.h"
#include "backends/cpu/kernels/tensor_ops_util.h"

#include <algorithm>
#include <cstring>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "backends/cpu/kernels/kernel_util.h"

namespace mcc::backends::cpu::tensor_ops {

void check_movable(const ir::Node& n, ir::DType dt, const char* what) {
  if (dt == ir::DType::String) return;
  const int bits = ir::info(dt).bits;
  if (bits < 8 || bits % 8 != 0 || bits > 128)
    throw UnsupportedError(n.describe() + ": " + n.op_type + " " + what + " dtype " +
                           ir::dtype_name(dt) +
                           " is not supported by the cpu backend (packed or unknown element type)");
}

size_t elem_bytes(ir::DType dt) {
  if (dt == ir::DType::String) return 0;
  return static_cast<size_t>(ir::info(dt).bits / 8);
}

void copy_elems(const ir::Tensor& src, int64_t s, ir::Tensor& dst, int64_t d, int64_t n) {
  if (n <= 0) return;
  if (src.dtype() == ir::DType::String) {
    const auto& ss = src.strings();
    std::copy(ss.begin() + s, ss.begin() + s + n, dst.mutable_strings().begin() + d);
    return;
  }
  const auto es = static_cast<int64_t>(elem_bytes(src.dtype()));
  std::memcpy(dst.mutable_raw() + d * es, src.raw() + s * es, static_cast<size_t>(n * es));
}

void fill_elems(const ir::Tensor& src, int64_t s, ir::Tensor& dst, int64_t d, int64_t n) {
  if (n <= 0) return;
  if (src.dtype() == ir::DType::String) {
    const std::string v = src.strings()[static_cast<size_t>(s)];
    auto& ds = dst.mutable_strings();
    std::fill(ds.begin() + d, ds.begin() + d + n, v);
    return;
  }
  const auto es = static_cast<int64_t>(elem_bytes(src.dtype()));
  std::byte* out = dst.mutable_raw() + d * es;
  std::memcpy(out, src.raw() + s * es, static_cast<size_t>(es));
  // Doubling copies: log2(n) memcpy calls.
  int64_t done = 1;
  while (done < n) {
    const int64_t k = std::min(done, n - done);
    std::memcpy(out + done * es, out, static_cast<size_t>(k * es));
    done += k;
  }
}

namespace {
// dst[j] = src[2 * j] for j < n, 4-byte elements (a step-2 Slice row, e.g. YOLOX's Focus).
#if MCC_X86
MCC_AVX512_BEGIN
void copy_every_second_f32_avx512(const std::byte* src, std::byte* dst, int64_t n) {
  int64_t j = 0;
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  for (; j + 16 <= n; j += 16) {
    // The second load reads up to element 2j + 31; only 2j + 30 is needed (mask the last).
    const __m512i a = _mm512_loadu_si512(src + 8 * j);
    const __m512i b = _mm512_maskz_loadu_epi32(__mmask16(0x7FFF), src + 8 * j + 64);
    _mm512_storeu_si512(dst + 4 * j, _mm512_permutex2var_epi32(a, even, b));
  }
  for (; j < n; ++j) std::memcpy(dst + 4 * j, src + 8 * j, 4);
}
MCC_AVX512_END
#endif

void copy_every_second_f32_portable(const std::byte* src, std::byte* dst, int64_t n) {
  int64_t j = 0;
  for (; j < n; ++j) std::memcpy(dst + 4 * j, src + 8 * j, 4);
}

void copy_every_second_f32(const std::byte* src, std::byte* dst, int64_t n) {
#if MCC_X86
  if (cpu_avx512()) return copy_every_second_f32_avx512(src, dst, n);
#endif
  copy_every_second_f32_portable(src, dst, n);
}
}  // namespace

void strided_copy(const KernelContext& ctx, const ir::Tensor& src, int64_t src_off,
                  std::vector<int64_t> out_dims, std::vector<int64_t> src_strides,
                  ir::Tensor& dst) {
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  if (total == 0) return;
  // Drop unit dims, then merge neighbours whose strides chain (outer == inner * size).
  std::vector<int64_t> md, ms;
  for (size_t i = 0; i < out_dims.size(); ++i) {
    if (out_dims[i] == 1) continue;
    if (!md.empty() && ms.back() == src_strides[i] * out_dims[i]) {
      md.back() *= out_dims[i];
      ms.back() = src_strides[i];
    } else {
      md.push_back(out_dims[i]);
      ms.push_back(src_strides[i]);
    }
  }
  if (md.empty()) {
    md.push_back(1);
    ms.push_back(0);
  }
  const int64_t inner = md.back();
  const int64_t inner_stride = ms.back();
  const int64_t rows = total / inner;
  const size_t outer_rank = md.size() - 1;
  // A transpose-like copy (the source-contiguous dim is not the innermost output dim): copy
  // 2-D tiles so both reads and writes stay within a few cache lines.
  size_t k_unit = md.size();
  for (size_t k = 0; k + 1 < md.size(); ++k)
    if (ms[k] == 1) k_unit = k;
  if (inner_stride != 1 && inner_stride != 0 && k_unit < md.size() &&
      src.dtype() != ir::DType::String) {
    constexpr int64_t kTile = 16;
    const auto dst_strides = contiguous_strides(md);
    const int64_t A = md[k_unit], B = inner, da = dst_strides[k_unit];
    // Planes: every index of the dims other than k_unit and the last.
    std::vector<int64_t> pd, ps, pds;
    for (size_t k = 0; k < outer_rank; ++k)
      if (k != k_unit) {
        pd.push_back(md[k]);
        ps.push_back(ms[k]);
        pds.push_back(dst_strides[k]);
      }
    int64_t planes = 1;
    for (int64_t d : pd) planes *= d;
    const int64_t a_tiles = (A + kTile - 1) / kTile;
    with_elem_copy(src, dst, [&](auto copy) {
      parallel_for_work(ctx, planes * a_tiles, kTile * B, [&](int64_t begin, int64_t end) {
        for (int64_t w = begin; w < end; ++w) {
          int64_t p = w / a_tiles, rem = p, so = src_off, dof = 0;
          const int64_t a0 = (w % a_tiles) * kTile, a1 = std::min(a0 + kTile, A);
          for (size_t k = pd.size(); k-- > 0;) {
            const int64_t i = rem % pd[k];
            rem /= pd[k];
            so += i * ps[k];
            dof += i * pds[k];
          }
          for (int64_t b0 = 0; b0 < B; b0 += kTile) {
            const int64_t b1 = std::min(b0 + kTile, B);
            for (int64_t a = a0; a < a1; ++a)
              for (int64_t b = b0; b < b1; ++b) copy(dof + a * da + b, so + a + b * inner_stride);
          }
        }
      });
    });
    return;
  }
  const bool elem4 = src.dtype() != ir::DType::String && elem_bytes(src.dtype()) == 4;
  const std::byte* src_bytes = elem4 ? src.raw() : nullptr;
  std::byte* dst_bytes = elem4 ? dst.mutable_raw() : nullptr;
  with_elem_copy(src, dst, [&](auto copy) {
    parallel_for_work(ctx, rows, inner, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> idx(outer_rank, 0);
      int64_t off = src_off, rem = begin;
      for (size_t k = outer_rank; k-- > 0;) {
        idx[k] = rem % md[k];
        rem /= md[k];
        off += idx[k] * ms[k];
      }
      for (int64_t row = begin; row < end; ++row) {
        const int64_t d0 = row * inner;
        if (inner_stride == 1)
          copy_elems(src, off, dst, d0, inner);
        else if (inner_stride == 0)
          fill_elems(src, off, dst, d0, inner);
        else if (inner_stride == 2 && elem4)
          copy_every_second_f32(src_bytes + off * 4, dst_bytes + d0 * 4, inner);
        else
          for (int64_t j = 0; j < inner; ++j) copy(d0 + j, off + j * inner_stride);
        for (size_t k = outer_rank; k-- > 0;) {
          off += ms[k];
          if (++idx[k] < md[k]) break;
          off -= ms[k] * md[k];
          idx[k] = 0;
        }
      }
    });
  });
}

ConcatLayout concat_layout(const KernelContext& ctx, int64_t axis_attr) {
  const ir::Node& n = ctx.node();
  if (ctx.num_inputs() == 0) throw ModelError(n.describe() + ": Concat needs at least one input");
  const ir::Tensor& first = ctx.in(0);
  check_movable(n, first.dtype());
  const auto r = static_cast<int64_t>(first.rank());
  if (r == 0) throw ModelError(n.describe() + ": Concat inputs must have rank >= 1");
  const int64_t axis = normalize_axis(n, axis_attr, r);
  ConcatLayout L;
  L.out = first.dims();
  L.out[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const ir::Tensor& t = ctx.in(i);
    bool same = t.dtype() == first.dtype() && t.rank() == first.rank();
    for (int64_t d = 0; same && d < r; ++d)
      same = d == axis || t.dims()[static_cast<size_t>(d)] == first.dims()[static_cast<size_t>(d)];
    if (!same)
      throw ModelError(n.describe() + ": Concat input " + std::to_string(i) + " " + ir::dtype_name(t.dtype()) +
                       dims_str(t.dims()) + " does not match input 0 " + ir::dtype_name(first.dtype()) +
                       dims_str(first.dims()) + " outside axis " + std::to_string(axis));
    L.out[static_cast<size_t>(axis)] += t.dims()[static_cast<size_t>(axis)];
  }
  int64_t inner = 1;
  for (int64_t d = 0; d < axis; ++d) L.outer *= L.out[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < r; ++d) inner *= L.out[static_cast<size_t>(d)];
  L.row = L.out[static_cast<size_t>(axis)] * inner;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) L.len.push_back(ctx.in(i).dims()[static_cast<size_t>(axis)] * inner);
  return L;
}

std::vector<int64_t> optional_ints(const KernelContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return {};
  return read_int_tensor(ctx.node(), ctx.in(i), what);
}

int64_t scalar_int(const KernelContext& ctx, size_t i, const char* what) {
  const auto v = read_int_tensor(ctx.node(), ctx.in(i), what);
  if (v.size() != 1)
    throw ModelError(ctx.node().describe() + ": " + what + " must hold one value, got " +
                     std::to_string(v.size()));
  return v[0];
}

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

}  // namespace mcc::backends::cpu::tensor_ops
