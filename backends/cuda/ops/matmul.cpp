// MatMul (opset 1+) on the cuda backend: numpy matmul with broadcast batch dims and 1-D operands,
// f32 or f16 (tensor cores, f32 accumulation). Batch dims become strided batched gemm calls: a
// side broadcast over the batch gets stride 0; when broadcasting mixes both sides (A [2,1,..],
// B [1,3,..]) the leading batch dims are looped over and the longest trailing run that one
// strided call can express is batched. K == 0 gives zeros; empty outputs launch nothing.
// register_matmul() also registers the rest of the family (gemm.cpp, conv.cpp).
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/ops/matrix_ops.h"
#include "backends/cuda/runtime/blas.h"
#include "backends/cuda/runtime/device_api.h"
#include "ir/errors.h"

namespace mcc::backends::cuda {

namespace dev = ::mcc::cuda;

namespace {

// A's and B's batch dims padded to the output's batch rank.
struct BatchLayout {
  std::vector<int64_t> out, a, b;
  int64_t count() const {
    int64_t c = 1;
    for (int64_t d : out) c *= d;
    return c;
  }
};

struct MatMulShape {
  int64_t M = 1, N = 1, K = 1;
  BatchLayout batch;
  std::vector<int64_t> out_dims;
};

MatMulShape matmul_shape(const ir::Node& n, std::vector<int64_t> a, std::vector<int64_t> b) {
  const MatMulOperands ops = matmul_operands(n, std::move(a), std::move(b));
  a = ops.a;
  b = ops.b;
  MatMulShape s;
  s.M = ops.M;
  s.K = ops.K;
  s.N = ops.N;
  const size_t rank = std::max(a.size(), b.size()) - 2;
  BatchLayout& L = s.batch;
  L.a.assign(rank - (a.size() - 2), 1);
  L.a.insert(L.a.end(), a.begin(), a.end() - 2);
  L.b.assign(rank - (b.size() - 2), 1);
  L.b.insert(L.b.end(), b.begin(), b.end() - 2);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t x = L.a[d], y = L.b[d];
    if (x != y && x != 1 && y != 1)
      throw ModelError(n.describe() + ": MatMul batch dims do not broadcast: A " + dims_text(a) +
                       ", B " + dims_text(b));
    L.out.push_back(x == 1 ? y : x);
  }
  s.out_dims = ops.out_dims(L.out);
  return s;
}

// How an operand's batch dims [from, end) map onto the flattened output batch index: all
// broadcast (stride 0), all present (one matrix per index), or neither.
enum class Run { Broadcast, Full, Mixed };
Run run_kind(const std::vector<int64_t>& side, const std::vector<int64_t>& out, size_t from) {
  bool full = true, broadcast = true;
  for (size_t d = from; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    full = full && side[d] == out[d];
    broadcast = broadcast && side[d] == 1;
  }
  return broadcast ? Run::Broadcast : full ? Run::Full : Run::Mixed;
}

// Matrix offset of output batch index `outer` (over dims [0, split)) in a side.
int64_t outer_offset(const std::vector<int64_t>& side, const std::vector<int64_t>& out, size_t split,
                     int64_t outer) {
  int64_t off = 0, side_stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    if (d < split) {
      const int64_t idx = outer % out[d];
      outer /= out[d];
      if (side[d] != 1) off += idx * side_stride;
    }
    side_stride *= side[d];
  }
  return off;
}

void run_matmul(dev::GemmType type, size_t elem, const MatMulShape& s, const std::byte* a,
                const std::byte* b, std::byte* y) {
  const BatchLayout& L = s.batch;
  const int64_t M = s.M, N = s.N, K = s.K;
  // Shared B with a full A: fold A's batch into the rows of one gemm.
  if (run_kind(L.b, L.out, 0) == Run::Broadcast && run_kind(L.a, L.out, 0) == Run::Full) {
    dev::gemm(type, false, false, L.count() * M, N, K, 1.f, a, K, 0, b, N, 0, 0.f, y, N, 0, 1);
    return;
  }
  size_t split = 0;
  while (split < L.out.size() && (run_kind(L.a, L.out, split) == Run::Mixed ||
                                   run_kind(L.b, L.out, split) == Run::Mixed))
    ++split;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < L.out.size(); ++d) (d < split ? outer : inner) *= L.out[d];
  const int64_t sa = run_kind(L.a, L.out, split) == Run::Full ? M * K : 0;
  const int64_t sb = run_kind(L.b, L.out, split) == Run::Full ? K * N : 0;
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t oa = outer_offset(L.a, L.out, split, o), ob = outer_offset(L.b, L.out, split, o);
    dev::gemm(type, false, false, M, N, K, 1.f, a + static_cast<size_t>(oa * M * K) * elem, K, sa,
              b + static_cast<size_t>(ob * K * N) * elem, N, sb, 0.f,
              y + static_cast<size_t>(o * inner * M * N) * elem, N, M * N, inner);
  }
}

void matmul_kernel(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& a = ctx.in(0);
  const ir::Tensor& b = ctx.in(1);
  const MatMulShape s = matmul_shape(n, a.dims(), b.dims());
  ir::Tensor& y = ctx.alloc_output(0, a.dtype(), s.out_dims);
  if (y.numel() == 0) return;
  const size_t elem = ir::dtype_size(a.dtype());
  if (s.K == 0) {
    dev::fill_zero(y.mutable_device_data(), static_cast<size_t>(y.numel()) * elem);
    return;
  }
  run_matmul(gemm_type(a.dtype()), elem, s, static_cast<const std::byte*>(a.device_data()),
             static_cast<const std::byte*>(b.device_data()),
             static_cast<std::byte*>(y.mutable_device_data()));
}

}  // namespace

void register_matmul(OpTable& t) {
  t.add("MatMul", 1, 0, stateless(matmul_kernel), same_float_inputs);
  register_gemm(t);
  register_conv(t);
}

}  // namespace mcc::backends::cuda
