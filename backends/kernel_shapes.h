// Argument checks and output shapes that every backend's kernels share, so the cpu and cuda
// kernels of an op accept the same inputs, fail with the same message and produce the same dims:
// MatMul operands, Gemm dims, Shape's start/end, Slice's per-axis window, Transpose's
// permutation. Host C++ only (no device code includes it).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace mcc::backends {

/// "[2,3]" for messages.
std::string dims_text(const std::vector<int64_t>& d);

/// MatMul's operands after ONNX's 1-D promotion (A [K] -> [1,K], B [K] -> [K,1]), with the
/// matrix sizes. Throws ModelError naming the node for rank 0 or differing inner dims.
struct MatMulOperands {
  std::vector<int64_t> a, b;  // promoted, rank >= 2
  int64_t M = 1, N = 1, K = 1;
  bool a_vector = false, b_vector = false;  // promoted from 1-D: that dim is dropped from the output
  /// The output dims for broadcast batch dims `batch`.
  std::vector<int64_t> out_dims(const std::vector<int64_t>& batch) const;
};
MatMulOperands matmul_operands(const ir::Node& n, std::vector<int64_t> a, std::vector<int64_t> b);

/// Gemm's M, N and K from 2-D A and B under transA/transB; ModelError naming the node otherwise.
struct GemmDims {
  int64_t M = 0, N = 0, K = 0;
};
GemmDims gemm_dims(const ir::Node& n, const std::vector<int64_t>& a, const std::vector<int64_t>& b, bool trans_a,
                   bool trans_b);

/// The dims range [first, last) Shape-15 returns for a tensor of rank r (start/end clamped, negative
/// counting from the end; without `end` up to r). last >= first.
std::pair<int64_t, int64_t> shape_range(int64_t r, int64_t start, bool has_end, int64_t end);

/// The window Slice takes of one axis of size `dim` for start s, end e and a non-zero step, after
/// ONNX's clamping: the first element taken and how many.
struct SliceWindow {
  int64_t start = 0, len = 0;
};
SliceWindow slice_window(int64_t s, int64_t e, int64_t step, int64_t dim);

/// Transpose's permutation for rank r: `perm` (negative axes normalised) or, without the
/// attribute, the reversed axes. Throws ModelError naming the node when it is not a permutation.
std::vector<int64_t> transpose_perm(const ir::Node& n, bool has_perm, const std::vector<int64_t>& perm, size_t r);

}  // namespace mcc::backends
