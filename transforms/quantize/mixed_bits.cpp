// Which weights of a weight-only model become 8-bit (see mixed_bits.h).
#include "transforms/quantize/mixed_bits.h"

#include <algorithm>
#include <cmath>

namespace mcc::transforms::quantize {
namespace {

/// sum_k h_k sum_n (W - Q4(W))^2 of one weight.
double rounding_cost(const MixedBitsWeight& w, const BlockFormat& f4) {
  const ir::Tensor& t = *w.weight;
  const int64_t K = t.dims()[0], N = t.dims()[1];
  const float* x = t.data<float>().data();
  const BlockQuantized q = rtn_quantize(x, K, N, f4);
  double cost = 0;
  for (int64_t k = 0; k < K; ++k) {
    const int64_t b = k / f4.block_size;
    double row = 0;
    for (int64_t n = 0; n < N; ++n) {
      const size_t pi = static_cast<size_t>(b * N + n);
      const double deq = (q.codes[static_cast<size_t>(k * N + n)] - q.zero_point[pi]) * static_cast<double>(q.scale[pi]);
      const double e = x[k * N + n] - deq;
      row += e * e;
    }
    cost += (w.mean_square ? (*w.mean_square)(k) : 1.0) * row;
  }
  return cost;
}

}  // namespace

MixedBitsChoice choose_eight_bit(const std::vector<MixedBitsWeight>& weights, const BlockFormat& f4, double ratio) {
  MixedBitsChoice c;
  struct Row {
    std::string name;
    int64_t elements;
    double cost;
  };
  std::vector<Row> rows;
  int64_t total = 0;
  bool data = false;
  for (const auto& w : weights) {
    rows.push_back({w.name, w.weight->numel(), rounding_cost(w, f4)});
    total += w.weight->numel();
    data = data || w.mean_square;
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.cost != b.cost ? a.cost > b.cost : a.name < b.name;
  });
  const double budget = (1.0 - ratio) * static_cast<double>(total);
  int64_t eight = 0;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Row& r : rows) {
    const bool take = static_cast<double>(eight + r.elements) <= budget;
    if (take) {
      eight += r.elements;
      c.eight_bit.insert(r.name);
    }
    list.push_back({{"weight", r.name}, {"elements", r.elements}, {"cost", r.cost}, {"bits", take ? 8 : 4}});
  }
  c.record = {{"ratio", ratio},
              {"criterion", data ? "input mean square x 4-bit rounding error (calibration data)"
                                 : "4-bit rounding error (no data)"},
              {"four_bit_share", total ? static_cast<double>(total - eight) / static_cast<double>(total) : 1.0},
              {"weights", list}};
  return c;
}

}  // namespace mcc::transforms::quantize
