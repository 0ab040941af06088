// GPTQ weight quantization (see quantize/gptq.h).
#include "transforms/quantize/gptq.h"

#include <algorithm>
#include <numeric>

#include "ir/errors.h"

namespace mcc::transforms::quantize {

using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMajorD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void HessianAccumulator::add(const float* x, int64_t rows, int64_t width) {
  if (width != H.rows())
    throw ModelError("layer input rows of width " + std::to_string(width) + ", expected " + std::to_string(H.rows()));
  if (rows <= 0) return;
  const Eigen::Map<const RowMajorF> X(x, rows, width);
  // One float product per chunk of rows (fast), accumulated in double across chunks and samples.
  H.noalias() += X.transpose() * X;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c) sum[c] += static_cast<double>(x[r * width + c]);
  tokens += rows;
}

Eigen::MatrixXd HessianAccumulator::centered_hessian() const {
  Eigen::MatrixXd c = H.cast<double>();
  if (tokens > 0) c.noalias() -= sum * sum.transpose() / static_cast<double>(tokens);
  return c;
}

void HessianAccumulator::add_columns(const float* a, int64_t k, int64_t cols) {
  if (k != H.rows())
    throw ModelError("layer input columns of height " + std::to_string(k) + ", expected " + std::to_string(H.rows()));
  if (cols <= 0) return;
  const Eigen::Map<const RowMajorF> A(a, k, cols);
  H.noalias() += A * A.transpose();
  // Each row summed in order in double: a vectorised float sum's rounding would depend on where
  // the buffer starts in memory, and so differ from run to run.
  for (int64_t r = 0; r < k; ++r) {
    double t = 0;
    for (int64_t c = 0; c < cols; ++c) t += static_cast<double>(a[r * cols + c]);
    sum[r] += t;
  }
  tokens += cols;
}

namespace {

/// The upper Cholesky factor U of A^-1, A = H with rows and columns in `order` plus damping;
/// zero-input rows are made harmless (A[k, k] = 1 before damping). With J the reversal, the
/// Cholesky factor L of J A J gives A^-1 = U^T U for U = J L^-1 J (upper triangular, positive
/// diagonal): one factorization in place and one triangular solve, so two K x K matrices at a
/// time (K = 5632 for a 1.1B Llama's down projection: 254 MB each), not the six of inverting A
/// and factorizing the inverse.
Eigen::MatrixXd inverse_cholesky_upper(const Eigen::MatrixXd& H, const std::vector<int64_t>& order, double damp) {
  const int64_t K = H.rows();
  auto a = [&](int64_t i, int64_t j) {  // A before damping
    const double v = H(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
    return i == j && v == 0 ? 1.0 : v;
  };
  double mean_diag = 0;
  for (int64_t k = 0; k < K; ++k) mean_diag += a(k, k);
  mean_diag /= static_cast<double>(std::max<int64_t>(K, 1));
  Eigen::MatrixXd M(K, K);
  for (double scale = damp;; scale *= 10) {
    for (int64_t j = 0; j < K; ++j)
      for (int64_t i = 0; i < K; ++i) M(i, j) = a(K - 1 - i, K - 1 - j);
    M.diagonal().array() += scale * mean_diag;
    Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> llt(M);  // L in M's lower triangle
    if (llt.info() == Eigen::Success) {
      Eigen::MatrixXd U = Eigen::MatrixXd::Identity(K, K);
      M.triangularView<Eigen::Lower>().solveInPlace(U);  // L^-1
      M.resize(0, 0);
      U.reverseInPlace();  // J L^-1 J
      return U;
    }
    if (scale >= 1e6) throw ModelError("gptq: the layer's input Hessian is not positive definite even with damping");
  }
}

}  // namespace

namespace {

/// Columns per chunk: GPTQ treats every output column on its own (the updates along K mix rows,
/// never columns), so a wide weight (an LM head [576, 49152]) is worked through in chunks and
/// only one chunk's double-precision copy is held at a time.
constexpr int64_t kColumnChunk = 2048;

/// tr(D^T H D) of the [K, cols] difference D (row-major), one chunk's share of a proxy loss.
double chunk_loss(const RowMajorD& D, const Eigen::MatrixXd& H) {
  return (H * D).cwiseProduct(D).sum();
}

}  // namespace

double proxy_loss(const float* w, const BlockQuantized& q, int64_t block_size, const Eigen::MatrixXd& H) {
  double loss = 0;
  for (int64_t n0 = 0; n0 < q.N; n0 += kColumnChunk) {
    const int64_t cols = std::min(kColumnChunk, q.N - n0);
    RowMajorD D(q.K, cols);
    for (int64_t k = 0; k < q.K; ++k)
      for (int64_t c = 0; c < cols; ++c)
        D(k, c) = static_cast<double>(w[k * q.N + n0 + c]) - dequantized(q, k, n0 + c, block_size);
    loss += chunk_loss(D, H);
  }
  return loss;
}

GptqResult gptq_quantize(const float* w, int64_t K, int64_t N, const Eigen::MatrixXd& H, const BlockFormat& f,
                         const GptqOptions& o) {
  if (H.rows() != K || H.cols() != K) throw InternalError("gptq: Hessian size does not match the weight");
  GptqResult res;
  BlockQuantized& q = res.q;
  q.K = K;
  q.N = N;
  const int64_t blocks = (K + f.block_size - 1) / f.block_size;
  const bool fixed = o.column_scales != nullptr;
  if (fixed && (blocks != 1 || static_cast<int64_t>(o.column_scales->size()) != N || f.zero_point))
    throw InternalError("gptq: fixed column scales need one symmetric block per column");
  q.codes.assign(static_cast<size_t>(K * N), 0);
  q.scale = fixed ? *o.column_scales : std::vector<float>(static_cast<size_t>(blocks * N), 1.f);
  q.zero_point.assign(q.scale.size(), 0);

  // Row order: natural, or by decreasing Hessian diagonal (stable: equal diagonals keep K order).
  std::vector<int64_t> order(static_cast<size_t>(K));
  std::iota(order.begin(), order.end(), 0);
  if (o.act_order)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return H(a, a) > H(b, b); });
  const Eigen::MatrixXd U = inverse_cholesky_upper(H, order, o.damp);

  // Block b's parameters for columns [n0, n0 + cols) from `rows` rows starting at `src`, whose
  // element (r, c) is src[r * stride + c].
  auto set_block_params = [&](int64_t b, int64_t n0, int64_t cols, const float* src, int64_t stride) {
    const int64_t rows = std::min(f.block_size, K - b * f.block_size);
    for (int64_t c = 0; c < cols; ++c) {
      const BlockParams p = block_params(src + c, rows, stride, f);
      q.scale[static_cast<size_t>(b * N + n0 + c)] = p.scale;
      q.zero_point[static_cast<size_t>(b * N + n0 + c)] = p.zero_point;
    }
  };
  if (o.act_order && !fixed)  // static blocks: parameters from the float weights, in K order
    for (int64_t b = 0; b < blocks; ++b) set_block_params(b, 0, N, w + b * f.block_size * N, N);

  std::vector<float> block_rows;  // one block's rows as updated so far (natural order only)
  for (int64_t n0 = 0; n0 < N; n0 += kColumnChunk) {
    const int64_t cols = std::min(kColumnChunk, N - n0);
    RowMajorD W(K, cols);  // rows in processing order
    for (int64_t i = 0; i < K; ++i) {
      const int64_t k = order[static_cast<size_t>(i)];
      if (H(k, k) == 0 && o.zero_unseen_rows) W.row(i).setZero();
      else
        for (int64_t c = 0; c < cols; ++c) W(i, c) = w[k * N + n0 + c];
    }
    std::vector<bool> have_params(static_cast<size_t>(blocks), o.act_order || fixed);
    for (int64_t i1 = 0; i1 < K; i1 += o.lazy_block) {
      const int64_t i2 = std::min(K, i1 + o.lazy_block), count = i2 - i1;
      RowMajorD Err(count, cols);
      for (int64_t i = i1; i < i2; ++i) {
        const int64_t k = order[static_cast<size_t>(i)], b = k / f.block_size;
        if (!have_params[static_cast<size_t>(b)]) {
          // Natural order: row i = k is the block's first row.
          const int64_t rows = std::min(f.block_size, K - k);
          block_rows.resize(static_cast<size_t>(rows * cols));
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) block_rows[static_cast<size_t>(r * cols + c)] = static_cast<float>(W(i + r, c));
          set_block_params(b, n0, cols, block_rows.data(), cols);
          have_params[static_cast<size_t>(b)] = true;
        }
        const double d = U(i, i);
        for (int64_t c = 0; c < cols; ++c) {
          const size_t bi = static_cast<size_t>(b * N + n0 + c);
          const BlockParams p{q.scale[bi], q.zero_point[bi]};
          const int32_t code = block_code(static_cast<float>(W(i, c)), p, f);
          q.codes[static_cast<size_t>(k * N + n0 + c)] = code;
          const double dq = static_cast<double>(static_cast<float>(code - p.zero_point) * p.scale);
          Err(i - i1, c) = (W(i, c) - dq) / d;
        }
        // Within the batch: update the remaining rows now.
        for (int64_t j = i + 1; j < i2; ++j) W.row(j) -= U(i, j) * Err.row(i - i1);
      }
      // The rows after the batch: one product.
      if (i2 < K) W.bottomRows(K - i2).noalias() -= U.block(i1, i2, count, K - i2).transpose() * Err;
    }
  }
  res.loss = proxy_loss(w, q, f.block_size, H);
  // Round to nearest on the same H, a chunk of columns at a time (its codes are not kept).
  for (int64_t n0 = 0; n0 < N; n0 += kColumnChunk) {
    const int64_t cols = std::min(kColumnChunk, N - n0);
    RowMajorD D(K, cols);
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t k0 = b * f.block_size, rows = std::min(f.block_size, K - k0);
      for (int64_t c = 0; c < cols; ++c) {
        const float* src = w + k0 * N + n0 + c;
        const BlockParams p = fixed ? BlockParams{q.scale[static_cast<size_t>(n0 + c)], 0} : block_params(src, rows, N, f);
        for (int64_t r = 0; r < rows; ++r) {
          const float x = src[r * N];
          D(k0 + r, c) = static_cast<double>(x) - static_cast<double>(static_cast<float>(block_code(x, p, f) - p.zero_point) * p.scale);
        }
      }
    }
    res.rtn_loss += chunk_loss(D, H);
  }
  return res;
}

}  // namespace mcc::transforms::quantize
