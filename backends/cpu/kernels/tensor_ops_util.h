// Byte-generic data movement shared by the tensor-op kernels (shape, transpose/concat/split,
// slice/pad, gather/scatter). Pure data movement never looks at values, so it works on element
// sizes (1, 2, 4, 8, 16 bytes: every fixed-size dtype incl. f8, c64, c128) and on string tensors,
// instead of instantiating a template per dtype. Packed sub-byte dtypes (u4, i4, f4) are refused.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace mcc::backends::cpu::tensor_ops {

/// Throws UnsupportedError naming the node when `dt` cannot be moved element by element
/// (packed sub-byte types, unknown codes). `what` names the operand ("input", "data").
void check_movable(const ir::Node& n, ir::DType dt, const char* what = "input");

/// Bytes per element of a movable non-string dtype (0 for strings).
size_t elem_bytes(ir::DType dt);

/// Copies `n` consecutive elements src[s..s+n) into dst[d..d+n) (same dtype, strings included).
void copy_elems(const ir::Tensor& src, int64_t s, ir::Tensor& dst, int64_t d, int64_t n);

/// Fills dst[d..d+n) with copies of element src[s].
void fill_elems(const ir::Tensor& src, int64_t s, ir::Tensor& dst, int64_t d, int64_t n);

/// Writes into `dst` (contiguous, dims `out_dims`) the elements of `src` read at
/// src_off + sum(i_k * src_strides[k]). Strides may be 0 (broadcast) or negative (reversal).
/// Merges dims, copies contiguous rows with memcpy and splits rows across the thread pool.
void strided_copy(const KernelContext& ctx, const ir::Tensor& src, int64_t src_off,
                  std::vector<int64_t> out_dims, std::vector<int64_t> src_strides, ir::Tensor& dst);

/// Calls f(copy) where copy(d, s) moves element src[s] to dst[d]; the copy is specialised on the
/// element size (one instantiation per size, plus strings).
template <class F>
void with_elem_copy(const ir::Tensor& src, ir::Tensor& dst, F&& f) {
  if (src.dtype() == ir::DType::String) {
    const auto& s = src.strings();
    auto& d = dst.mutable_strings();
    f([&](int64_t di, int64_t si) { d[static_cast<size_t>(di)] = s[static_cast<size_t>(si)]; });
    return;
  }
  const std::byte* sp = src.raw();
  std::byte* dp = dst.mutable_raw();
  auto run = [&](auto tag) {
    using W = decltype(tag);
    f([sp, dp](int64_t di, int64_t si) {
      std::memcpy(dp + di * static_cast<int64_t>(sizeof(W)),
                  sp + si * static_cast<int64_t>(sizeof(W)), sizeof(W));
    });
  };
  struct B16 {
    uint64_t lo, hi;
  };
  switch (elem_bytes(src.dtype())) {
    case 1:
      run(uint8_t{});
      break;
    case 2:
      run(uint16_t{});
      break;
    case 4:
      run(uint32_t{});
      break;
    case 8:
      run(uint64_t{});
      break;
    default:
      run(B16{});
      break;
  }
}

/// A Concat of the kernel's inputs along axis_attr: the output dims, and the input slabs in
/// each of the `outer` rows (input i: len[i] consecutive elements at o * len[i]; the output
/// row o, of `row` elements, holds them in input order).
struct ConcatLayout {
  std::vector<int64_t> out;
  int64_t outer = 1, row = 0;
  std::vector<int64_t> len;
};
/// Throws ModelError naming the node for no inputs, rank 0, or inputs whose dtype or dims
/// (outside the axis) differ from input 0's.
ConcatLayout concat_layout(const KernelContext& ctx, int64_t axis_attr);

/// Integer input i as int64 values; empty when the input is absent.
std::vector<int64_t> optional_ints(const KernelContext& ctx, size_t i, const char* what);
/// A scalar (or one-element) integer input as int64.
int64_t scalar_int(const KernelContext& ctx, size_t i, const char* what);

/// "[2,3,4]" for messages.
std::string dims_str(const std::vector<int64_t>& d);

}  // namespace mcc::backends::cpu::tensor_ops
