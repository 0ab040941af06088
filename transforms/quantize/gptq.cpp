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
  const Eigen::MatrixXf part = X.transpose() * X;
  H += part.cast<double>();
  tokens += rows;
}

namespace {

/// The upper Cholesky factor of H^-1 after damping; zero-input rows are made harmless (H[k, k] = 1).
Eigen::MatrixXd inverse_cholesky_upper(Eigen::MatrixXd H, double damp) {
  const int64_t K = H.rows();
  for (int64_t k = 0; k < K; ++k)
    if (H(k, k) == 0) H(k, k) = 1;
  const double mean_diag = H.diagonal().mean();
  for (double scale = damp;; scale *= 10) {
    Eigen::MatrixXd Hd = H;
    Hd.diagonal().array() += scale * mean_diag;
    Eigen::LLT<Eigen::MatrixXd> llt(Hd);
    if (llt.info() == Eigen::Success) {
      const Eigen::MatrixXd inv = llt.solve(Eigen::MatrixXd::Identity(K, K));
      Eigen::LLT<Eigen::MatrixXd> l2(inv);
      if (l2.info() == Eigen::Success) return l2.matrixU();
    }
    if (scale >= 1e6) throw ModelError("gptq: the layer's input Hessian is not positive definite even with damping");
  }
}

}  // namespace

double proxy_loss(const float* w, const BlockQuantized& q, int64_t block_size, const Eigen::MatrixXd& H) {
  Eigen::MatrixXd D(q.K, q.N);
  for (int64_t k = 0; k < q.K; ++k)
    for (int64_t n = 0; n < q.N; ++n) D(k, n) = static_cast<double>(w[k * q.N + n]) - dequantized(q, k, n, block_size);
  return (D.transpose() * H * D).trace();
}

GptqResult gptq_quantize(const float* w, int64_t K, int64_t N, const Eigen::MatrixXd& H, const BlockFormat& f,
                         const GptqOptions& o) {
  if (H.rows() != K || H.cols() != K) throw InternalError("gptq: Hessian size does not match the weight");
  GptqResult res;
  BlockQuantized& q = res.q;
  q.K = K;
  q.N = N;
  const int64_t blocks = (K + f.block_size - 1) / f.block_size;
  q.codes.assign(static_cast<size_t>(K * N), 0);
  q.scale.assign(static_cast<size_t>(blocks * N), 1.f);
  q.zero_point.assign(q.scale.size(), 0);

  // Row order: natural, or by decreasing Hessian diagonal (stable: equal diagonals keep K order).
  std::vector<int64_t> order(static_cast<size_t>(K));
  std::iota(order.begin(), order.end(), 0);
  if (o.act_order)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return H(a, a) > H(b, b); });
  Eigen::MatrixXd Hp(K, K);
  RowMajorD W(K, N);  // rows in processing order
  for (int64_t i = 0; i < K; ++i) {
    for (int64_t j = 0; j < K; ++j) Hp(i, j) = H(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
    for (int64_t n = 0; n < N; ++n) W(i, n) = w[order[static_cast<size_t>(i)] * N + n];
  }
  for (int64_t i = 0; i < K; ++i)
    if (H(order[static_cast<size_t>(i)], order[static_cast<size_t>(i)]) == 0) W.row(i).setZero();
  const Eigen::MatrixXd U = inverse_cholesky_upper(Hp, o.damp);

  std::vector<bool> have_params(static_cast<size_t>(blocks), false);
  // Block b's parameters from `rows` rows of N values starting at `src` (row-major).
  auto set_block_params = [&](int64_t b, const float* src) {
    const int64_t rows = std::min(f.block_size, K - b * f.block_size);
    for (int64_t n = 0; n < N; ++n) {
      const BlockParams p = block_params(src + n, rows, N, f);
      q.scale[static_cast<size_t>(b * N + n)] = p.scale;
      q.zero_point[static_cast<size_t>(b * N + n)] = p.zero_point;
    }
    have_params[static_cast<size_t>(b)] = true;
  };
  if (o.act_order)  // static blocks: parameters from the float weights, in K order
    for (int64_t b = 0; b < blocks; ++b) set_block_params(b, w + b * f.block_size * N);

  std::vector<float> block_rows;  // one block's rows as updated so far (natural order only)
  for (int64_t i1 = 0; i1 < K; i1 += o.lazy_block) {
    const int64_t i2 = std::min(K, i1 + o.lazy_block), count = i2 - i1;
    RowMajorD Err(count, N);
    for (int64_t i = i1; i < i2; ++i) {
      const int64_t k = order[static_cast<size_t>(i)], b = k / f.block_size;
      if (!have_params[static_cast<size_t>(b)]) {
        // Natural order: row i = k is the block's first row.
        const int64_t rows = std::min(f.block_size, K - k);
        block_rows.resize(static_cast<size_t>(rows * N));
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t n = 0; n < N; ++n) block_rows[static_cast<size_t>(r * N + n)] = static_cast<float>(W(i + r, n));
        set_block_params(b, block_rows.data());
      }
      const double d = U(i, i);
      for (int64_t n = 0; n < N; ++n) {
        const size_t bi = static_cast<size_t>(b * N + n);
        const BlockParams p{q.scale[bi], q.zero_point[bi]};
        const int32_t c = block_code(static_cast<float>(W(i, n)), p, f);
        q.codes[static_cast<size_t>(k * N + n)] = c;
        const double dq = static_cast<double>(static_cast<float>(c - p.zero_point) * p.scale);
        Err(i - i1, n) = (W(i, n) - dq) / d;
      }
      // Within the batch: update the remaining rows now.
      for (int64_t j = i + 1; j < i2; ++j) W.row(j) -= U(i, j) * Err.row(i - i1);
    }
    // The rows after the batch: one product.
    if (i2 < K) W.bottomRows(K - i2).noalias() -= U.block(i1, i2, count, K - i2).transpose() * Err;
  }
  res.loss = proxy_loss(w, q, f.block_size, H);
  res.rtn_loss = proxy_loss(w, rtn_quantize(w, K, N, f), f.block_size, H);
  return res;
}

}  // namespace mcc::transforms::quantize
