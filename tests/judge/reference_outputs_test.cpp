// ReferenceOutputs (judge/reference_outputs.h): outputs past the memory budget go to the scratch
// file and come back with the same dtype, dims and bytes; small tensors, string tensors and
// sequences stay in memory; a sample is handed over once.
#include "judge/reference_outputs.h"

#include <doctest/doctest.h>

#include <cstring>

#include "ir/errors.h"
#include "support/graph_builder.h"

using namespace mcc;
using backends::RValue;

namespace {

bool same_bytes(const ir::Tensor& a, const ir::Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("reference outputs: past the budget, large tensors are spilled and read back unchanged") {
  const size_t big = judge::ReferenceOutputs::kSpillMinBytes / sizeof(float);  // 1 MiB of floats
  judge::ReferenceOutputs store(3 * judge::ReferenceOutputs::kSpillMinBytes / 2);  // room for one
  std::vector<std::vector<ir::Tensor>> originals;
  for (uint32_t i = 0; i < 3; ++i) {
    ir::Tensor large = test::random_tensor({1, static_cast<int64_t>(big)}, 10 + i);
    ir::Tensor small = test::random_tensor({4, 5}, 20 + i);
    ir::Tensor ints = test::random_int_tensor<int64_t>({256, 1024}, 0, 1000, 30 + i);  // 2 MiB of int64
    originals.push_back({large.clone(), small.clone(), ints.clone()});
    std::vector<RValue> outs;
    outs.push_back(RValue::of(std::move(large)));
    outs.push_back(RValue::of(std::move(small)));
    outs.push_back(RValue::of(std::move(ints)));
    outs.push_back(RValue::sequence({test::random_tensor({2}, 40 + i)}));
    outs.push_back(RValue::none());
    store.add(std::move(outs));
  }
  CHECK(store.samples() == 3);
  // The first sample's 1 MiB float tensor fits the budget; every 2 MiB int64 tensor and the later
  // float ones go to the file.
  CHECK(store.spilled_bytes() == 8 * judge::ReferenceOutputs::kSpillMinBytes);
  for (size_t i : {2u, 0u, 1u}) {  // in any order
    CAPTURE(i);
    const auto got = store.take(i);
    REQUIRE(got.size() == 5);
    for (size_t k = 0; k < 3; ++k) CHECK(same_bytes(got[k].tensor, originals[i][k]));
    CHECK(got[3].kind == RValue::Kind::Sequence);
    CHECK(got[3].seq.size() == 1);
    CHECK(got[4].kind == RValue::Kind::None);
  }
  CHECK_THROWS_AS(store.take(1), InternalError);
  CHECK_THROWS_AS(store.take(3), InternalError);
}

TEST_CASE("reference outputs: under the budget nothing is written") {
  judge::ReferenceOutputs store;
  for (uint32_t i = 0; i < 4; ++i) store.add({RValue::of(test::random_tensor({64, 64}, i))});
  CHECK(store.spilled_bytes() == 0);
  CHECK(store.take(3)[0].tensor.dims() == std::vector<int64_t>{64, 64});
}
