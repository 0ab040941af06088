// ir/tensor_streaming: consume_in_chunks visits every element once in order, consumes the tensor,
// and never discards bytes that another tensor still shares.
#include <doctest/doctest.h>

#include <numeric>

#include "ir/tensor_streaming.h"

using namespace mcc;

namespace {

ir::Tensor iota_tensor(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.f);
  return ir::Tensor::from_vector<float>({n}, v);
}

/// Sum of all elements seen, and checks that chunks arrive contiguous and in order.
double consume_sum(ir::Tensor&& t, int64_t expect_n) {
  double sum = 0;
  int64_t next = 0;
  ir::consume_in_chunks(std::move(t), [&](const std::byte* data, int64_t b, int64_t e) {
    REQUIRE(b == next);
    REQUIRE(e > b);
    const auto* f = reinterpret_cast<const float*>(data);
    for (int64_t i = b; i < e; ++i) sum += f[i];
    next = e;
  });
  CHECK(next == expect_n);
  return sum;
}

}  // namespace

TEST_CASE("consume_in_chunks visits every element of a multi-chunk tensor and consumes it") {
  const int64_t n = ir::stream_chunk_elements(4) * 3 + 12345;  // three full chunks and a tail
  ir::Tensor t = iota_tensor(n);
  const double want = static_cast<double>(n) * static_cast<double>(n - 1) / 2;
  CHECK(consume_sum(std::move(t), n) == doctest::Approx(want));
  CHECK_FALSE(t.defined());  // NOLINT: consumed on purpose
}

TEST_CASE("consume_in_chunks leaves bytes shared with another tensor intact") {
  const int64_t n = ir::stream_chunk_elements(4) * 2 + 7;
  ir::Tensor t = iota_tensor(n);
  const ir::Tensor other = t;  // shares the buffer
  consume_sum(std::move(t), n);
  const auto d = other.data<float>();
  bool intact = true;
  for (int64_t i = 0; i < n; i += 4099) intact = intact && d[static_cast<size_t>(i)] == static_cast<float>(i);
  CHECK(intact);
  CHECK(d[static_cast<size_t>(n - 1)] == static_cast<float>(n - 1));
}

TEST_CASE("consume_in_chunks handles empty tensors without calling back") {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::F32, {0, 4});
  int calls = 0;
  ir::consume_in_chunks(std::move(t), [&](const std::byte*, int64_t, int64_t) { ++calls; });
  CHECK(calls == 0);
}
