// Layout ops: Transpose 1-24, Concat 1-13+ (opset 1 default axis 1), Split 1-18+ (split as
// attribute or input, num_outputs with an uneven last chunk from 18), DepthToSpace 1-13+ (DCR and
// CRD), SpaceToDepth 1-13+, Tile 1-13+ (opset 1 tiles/axis inputs and repeats from 6), Expand
// 8-13+. dtypes: every fixed-size dtype and string (pure data movement, byte-generic; see
// tensor_ops_util.h). No arithmetic, so no accumulation type.
// Batched 2-D transposes of 4-byte elements take a tiled fast path; other permutations take the
// generic strided copy.
// Not supported: packed sub-byte dtypes (u4, i4, f4e2m1).
#include <algorithm>
#include <cstdint>

#include "backends/cpu/kernels/cpu_isa.h"
#if MCC_X86
#include "backends/cpu/kernels/transpose_avx512.h"
#endif
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/kernels.h"
#include "backends/cpu/kernels/tensor_ops_util.h"
#include "backends/kernel_shapes.h"

namespace mcc::backends::cpu {
namespace {
using namespace tensor_ops;
using ir::DType;
using ir::Tensor;

#if MCC_X86
MCC_AVX512_BEGIN
// The 16x16 block at s (row stride ls) transposed into d (row stride ld): 16 loads, 64
// shuffles, 16 stores.
inline void transpose_16x16(const uint32_t* s, int64_t ls, uint32_t* d, int64_t ld) {
  __m512i r[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(s + i * ls);
  avx512::transpose_16x16(r);
  for (int i = 0; i < 16; ++i) _mm512_storeu_si512(d + i * ld, r[i]);
}

// Rows [r0, rf) x columns [c0, cf) of s ([rows, cols]) into d ([cols, rows]) in 16x16 blocks.
void transpose_blocks_avx512(const uint32_t* s, uint32_t* d, int64_t rows, int64_t cols, int64_t r0,
                             int64_t rf, int64_t c0, int64_t cf) {
  for (int64_t rb = r0; rb < rf; rb += 16)
    for (int64_t cb = c0; cb < cf; cb += 16) transpose_16x16(s + rb * cols + cb, cols, d + cb * rows + rb, rows);
}
MCC_AVX512_END
#endif

// dst[b][c][r] = src[b][r][c] for `batch` row-major [rows, cols] matrices of 4-byte elements,
// in 32x32 tiles (both the reads and the writes stay within 32 cache lines); whole 16x16 blocks
// are transposed in registers on CPUs with AVX-512.
void transpose_batched_4(const KernelContext& ctx, const uint32_t* src, uint32_t* dst,
                         int64_t batch, int64_t rows, int64_t cols) {
  constexpr int64_t kT = 32;
  const int64_t rt = (rows + kT - 1) / kT, ct = (cols + kT - 1) / kT;
  // Work items: a row tile x a band of up to 8 column tiles, so one tall matrix ([85, 3549] ->
  // [3549, 85]: 3 row tiles) still splits evenly across threads.
  constexpr int64_t kBand = 8;
  const int64_t bands = (ct + kBand - 1) / kBand;
  const bool blocks = cpu_avx512();
  ctx.parallel_for(batch * rt * bands, kT * kT * kBand, [&](int64_t b, int64_t e) {
    for (int64_t it = b; it < e; ++it) {
      const int64_t band = it % bands, tile = it / bands;
      const int64_t bi = tile / rt, r0 = (tile % rt) * kT, r1 = std::min(r0 + kT, rows);
      const uint32_t* s = src + bi * rows * cols;
      uint32_t* d = dst + bi * rows * cols;
      for (int64_t c0 = band * kBand * kT; c0 < std::min(ct, (band + 1) * kBand) * kT; c0 += kT) {
        const int64_t c1 = std::min(c0 + kT, cols);
        // Rows [r0, rf) x columns [c0, cf) in whole 16x16 blocks (AVX-512), the rest one by one.
        int64_t rf = r0, cf = c0;
#if MCC_X86
        if (blocks) {
          rf = r0 + (r1 - r0) / 16 * 16;
          cf = c0 + (c1 - c0) / 16 * 16;
          transpose_blocks_avx512(s, d, rows, cols, r0, rf, c0, cf);
        }
#endif
        for (int64_t c = c0; c < c1; ++c) {
          uint32_t* __restrict dr = d + c * rows;
          const uint32_t* __restrict sc = s + c;
          for (int64_t r = c < cf ? rf : r0; r < r1; ++r) dr[r] = sc[r * cols];
        }
      }
    }
  });
}

/// Writes x permuted by `perm` (viewing x with dims `dims`) into output 0.
void permute_into(KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& perm, std::vector<int64_t> out_shape) {
  const auto strides = contiguous_strides(dims);
  std::vector<int64_t> od(perm.size()), os(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    od[i] = dims[static_cast<size_t>(perm[i])];
    os[i] = strides[static_cast<size_t>(perm[i])];
  }
  Tensor& y = ctx.alloc_output_overwritten(0, x.dtype(), std::move(out_shape));
  // Batched 2-D transpose of 4-byte elements (e.g. [N, C, HW] -> [N, HW, C]): merged output
  // dims [B, C, R] reading source strides [R*C, 1, C].
  if (x.dtype() != DType::String && elem_bytes(x.dtype()) == 4 && y.numel() > 0) {
    std::vector<int64_t> md, ms;
    for (size_t i = 0; i < od.size(); ++i) {
      if (od[i] == 1) continue;
      if (!md.empty() && ms.back() == os[i] * od[i]) {
        md.back() *= od[i];
        ms.back() = os[i];
      } else {
        md.push_back(od[i]);
        ms.push_back(os[i]);
      }
    }
    if (md.size() == 2) {
      md.insert(md.begin(), 1);
      ms.insert(ms.begin(), md[1] * md[2]);
    }
    if (md.size() == 3 && ms[1] == 1 && ms[2] == md[1] && ms[0] == md[1] * md[2]) {
      transpose_batched_4(ctx, reinterpret_cast<const uint32_t*>(x.raw()),
                          reinterpret_cast<uint32_t*>(y.mutable_raw()), md[0], md[2], md[1]);
      return;
    }
  }
  strided_copy(ctx, x, 0, od, os, y);
}

Kernel make_transpose(const ir::Node& n) {
  const bool has_perm = n.has_attr("perm");
  const std::vector<int64_t> perm_attr = n.attr_ints("perm");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    check_movable(ctx.node(), x.dtype());
    const size_t r = x.rank();
    const std::vector<int64_t> perm = transpose_perm(ctx.node(), has_perm, perm_attr, r);
    std::vector<int64_t> out(r);
    for (size_t i = 0; i < r; ++i) out[i] = x.dims()[static_cast<size_t>(perm[i])];
    permute_into(ctx, x, x.dims(), perm, out);
  };
}

Kernel make_concat(const ir::Node& n) {
  if (!n.has_attr("axis") && n.since_version >= 4)
    throw ModelError(n.describe() + ": Concat requires the axis attribute");
  const int64_t axis_attr = n.attr_int("axis", 1);
  return [=](KernelContext& ctx) {
    const ConcatLayout L = concat_layout(ctx, axis_attr);
    Tensor& y = ctx.alloc_output_overwritten(0, ctx.in(0).dtype(), L.out);
    if (y.numel() == 0) return;
    // Work items: each input's part of each output row in pieces of at most kPiece elements, so
    // a concat of one image's channels (one output row) still splits across threads.
    constexpr int64_t kPiece = 1 << 14;
    const size_t inputs = ctx.num_inputs();
    std::vector<int64_t> first(inputs + 1, 0), at(inputs, 0);  // first piece, offset in the row
    for (size_t i = 0; i < inputs; ++i) {
      first[i + 1] = first[i] + (L.len[i] + kPiece - 1) / kPiece;
      if (i + 1 < inputs) at[i + 1] = at[i] + L.len[i];
    }
    const int64_t per_row = first[inputs];
    if (per_row == 0) return;
    ctx.parallel_for(L.outer * per_row, std::min(kPiece, L.row), [&](int64_t b, int64_t e) {
      size_t i = 0;
      for (int64_t item = b; item < e; ++item) {
        const int64_t o = item / per_row, j = item % per_row;
        if (j == 0 || j < first[i]) i = 0;
        while (j >= first[i + 1]) ++i;
        const int64_t off = (j - first[i]) * kPiece, cnt = std::min(kPiece, L.len[i] - off);
        copy_elems(ctx.in(i), o * L.len[i] + off, y, o * L.row + at[i] + off, cnt);
      }
    });
  };
}

Kernel make_split(const ir::Node& n) {
  const int64_t axis_attr = n.attr_int("axis", 0);
  const std::vector<int64_t> split_attr = n.attr_ints("split");
  const bool has_num = n.has_attr("num_outputs");
  const int64_t num_outputs = n.attr_int("num_outputs", 0);
  if (has_num && num_outputs < 1)
    throw ModelError(n.describe() + ": Split num_outputs must be >= 1");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    check_movable(ctx.node(), x.dtype());
    const auto r = static_cast<int64_t>(x.rank());
    const int64_t axis = normalize_axis(ctx.node(), axis_attr, r);
    const int64_t dim = x.dims()[static_cast<size_t>(axis)];
    const auto nout = static_cast<int64_t>(ctx.num_outputs());
    std::vector<int64_t> sizes =
        ctx.has_input(1) ? read_int_tensor(ctx.node(), ctx.in(1), "Split split") : split_attr;
    if (sizes.empty()) {
      if (has_num && num_outputs != nout)
        throw ModelError(ctx.node().describe() + ": Split num_outputs " +
                         std::to_string(num_outputs) + " differs from the " + std::to_string(nout) +
                         " outputs");
      // Equal parts; from opset 18 with num_outputs the last chunk may be smaller.
      const int64_t chunk = has_num ? (dim + nout - 1) / nout : dim / nout;
      if (!has_num && dim % nout != 0)
        throw ModelError(ctx.node().describe() + ": Split cannot divide axis of size " +
                         std::to_string(dim) + " into " + std::to_string(nout) + " equal parts");
      for (int64_t i = 0; i < nout; ++i)
        sizes.push_back(std::clamp(dim - i * chunk, int64_t{0}, chunk));
    }
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0)
        throw ModelError(ctx.node().describe() + ": Split sizes " + dims_str(sizes) +
                         " are negative");
      sum += s;
    }
    if (static_cast<int64_t>(sizes.size()) != nout || sum != dim)
      throw ModelError(ctx.node().describe() + ": Split sizes " + dims_str(sizes) +
                       " do not cover axis of size " + std::to_string(dim) + " with " +
                       std::to_string(nout) + " outputs");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < r; ++d) inner *= x.dims()[static_cast<size_t>(d)];
    int64_t start = 0;
    for (int64_t i = 0; i < nout; ++i) {
      const int64_t sz = sizes[static_cast<size_t>(i)];
      if (ctx.wants_output(static_cast<size_t>(i))) {
        std::vector<int64_t> od = x.dims();
        od[static_cast<size_t>(axis)] = sz;
        Tensor& y = ctx.alloc_output(static_cast<size_t>(i), x.dtype(), od);
        strided_copy(ctx, x, start * inner, {outer, sz * inner}, {dim * inner, 1}, y);
      }
      start += sz;
    }
  };
}

Kernel make_depth_to_space(const ir::Node& n) {
  const int64_t b = n.attr_int("blocksize", 0);
  if (b < 1) throw ModelError(n.describe() + ": DepthToSpace blocksize must be >= 1");
  const std::string mode = n.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    throw ModelError(n.describe() + ": DepthToSpace mode '" + mode + "' is not DCR or CRD");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    check_movable(ctx.node(), x.dtype());
    if (x.rank() != 4 || x.dims()[1] % (b * b) != 0)
      throw ModelError(ctx.node().describe() +
                       ": DepthToSpace needs [N,C,H,W] with C divisible by blocksize^2, got " +
                       dims_str(x.dims()));
    const int64_t N = x.dims()[0], C = x.dims()[1] / (b * b), H = x.dims()[2], W = x.dims()[3];
    if (mode == "DCR")
      permute_into(ctx, x, {N, b, b, C, H, W}, {0, 3, 4, 1, 5, 2}, {N, C, H * b, W * b});
    else
      permute_into(ctx, x, {N, C, b, b, H, W}, {0, 1, 4, 2, 5, 3}, {N, C, H * b, W * b});
  };
}

Kernel make_space_to_depth(const ir::Node& n) {
  const int64_t b = n.attr_int("blocksize", 0);
  if (b < 1) throw ModelError(n.describe() + ": SpaceToDepth blocksize must be >= 1");
  return [=](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    check_movable(ctx.node(), x.dtype());
    if (x.rank() != 4 || x.dims()[2] % b != 0 || x.dims()[3] % b != 0)
      throw ModelError(ctx.node().describe() +
                       ": SpaceToDepth needs [N,C,H,W] with H and W divisible by blocksize, got " +
                       dims_str(x.dims()));
    const int64_t N = x.dims()[0], C = x.dims()[1], H = x.dims()[2] / b, W = x.dims()[3] / b;
    permute_into(ctx, x, {N, C, H, b, W, b}, {0, 3, 5, 1, 2, 4}, {N, C * b * b, H, W});
  };
}

void run_tile(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  check_movable(ctx.node(), x.dtype());
  const size_t r = x.rank();
  std::vector<int64_t> reps;
  if (ctx.has_input(2)) {  // opset 1: a scalar tile count along one axis
    reps.assign(r, 1);
    const int64_t axis =
        normalize_axis(ctx.node(), scalar_int(ctx, 2, "Tile axis"), static_cast<int64_t>(r));
    reps[static_cast<size_t>(axis)] = scalar_int(ctx, 1, "Tile tiles");
  } else {
    reps = read_int_tensor(ctx.node(), ctx.in(1), "Tile repeats");
  }
  if (reps.size() != r)
    throw ModelError(ctx.node().describe() + ": Tile repeats " + dims_str(reps) +
                     " must have one value per input dim " + dims_str(x.dims()));
  const auto strides = contiguous_strides(x.dims());
  std::vector<int64_t> out(r), vd, vs;
  for (size_t i = 0; i < r; ++i) {
    if (reps[i] < 0)
      throw ModelError(ctx.node().describe() + ": Tile repeats " + dims_str(reps) +
                       " are negative");
    if (__builtin_mul_overflow(x.dims()[i], reps[i], &out[i]))
      throw ModelError(ctx.node().describe() + ": Tile repeats " + dims_str(reps) +
                       " overflow the output size");
    vd.push_back(reps[i]);
    vs.push_back(0);
    vd.push_back(x.dims()[i]);
    vs.push_back(strides[i]);
  }
  Tensor& y = ctx.alloc_output(0, x.dtype(), out);
  strided_copy(ctx, x, 0, vd, vs, y);
}

void run_expand(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  check_movable(ctx.node(), x.dtype());
  const auto shape = read_int_tensor(ctx.node(), ctx.in(1), "Expand shape");
  const auto out = broadcast_shapes(ctx.node(), x.dims(), shape);
  if (out == x.dims()) {
    ctx.set_output(0, x);
    return;
  }
  Tensor& y = ctx.alloc_output(0, x.dtype(), out);
  strided_copy(ctx, x, 0, out, broadcast_strides(x.dims(), out), y);
}

}  // namespace

void register_transpose_concat_split(KernelRegistry& r) {
  r.add("Transpose", 1, 0, make_transpose);
  r.add("Concat", 1, 0, make_concat);
  r.add("Split", 1, 0, make_split);
  r.add("DepthToSpace", 1, 0, make_depth_to_space);
  r.add("SpaceToDepth", 1, 0, make_space_to_depth);
  r.add("Tile", 1, 0, stateless(run_tile));
  r.add("Expand", 8, 0, stateless(run_expand));
}

}  // namespace mcc::backends::cpu
