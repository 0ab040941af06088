// Mixed 4/8-bit weight-only choice: the costliest weights (4-bit rounding error, weighted by the
// inputs' mean squares when there is data) become 8-bit while they fit in 1 - ratio of the elements.
#include <doctest/doctest.h>

#include "support/graph_builder.h"
#include "transforms/quantize/mixed_bits.h"

using namespace mcc;
using namespace mcc::transforms::quantize;

TEST_CASE("mixed bits: the costliest weights that fit become 8-bit; data reweights the cost; ratio 1 keeps all 4-bit") {
  // `rough` has spread-out values (large 4-bit error), `smooth` tiny ones, `big` twice the size.
  const ir::Tensor rough = test::random_tensor({64, 16}, 1, -4.f, 4.f);
  const ir::Tensor smooth = test::random_tensor({64, 16}, 2, -0.1f, 0.1f);
  const ir::Tensor big = test::random_tensor({128, 16}, 3, -1.f, 1.f);
  BlockFormat f4;
  f4.bits = 4;
  f4.block_size = 32;
  f4.zero_point = true;
  std::vector<MixedBitsWeight> ws{{"rough", &rough, nullptr}, {"smooth", &smooth, nullptr}, {"big", &big, nullptr}};

  // 4096 elements; 40 % may be 8-bit (1638): rough (1024) fits, then neither big (2048) nor smooth.
  const MixedBitsChoice c = choose_eight_bit(ws, f4, 0.6);
  CHECK(c.eight_bit == std::set<std::string>{"rough"});
  CHECK(c.record["four_bit_share"] == doctest::Approx(0.75));
  CHECK(c.record["criterion"] == "4-bit rounding error (no data)");
  REQUIRE(c.record["weights"].size() == 3);
  CHECK(c.record["weights"][0]["weight"] == "rough");  // most costly first
  CHECK(c.record["weights"][0]["bits"] == 8);
  CHECK(c.record["weights"][0]["cost"].get<double>() > c.record["weights"][1]["cost"].get<double>());

  // Inputs of `smooth` a million times larger in mean square: its rounding now costs most.
  const Eigen::VectorXd loud = Eigen::VectorXd::Constant(64, 1e6), quiet = Eigen::VectorXd::Constant(64, 1.0);
  ws[0].mean_square = &quiet;
  ws[1].mean_square = &loud;
  const MixedBitsChoice d = choose_eight_bit(ws, f4, 0.6);
  CHECK(d.eight_bit == std::set<std::string>{"smooth"});
  CHECK(d.record["criterion"] == "input mean square x 4-bit rounding error (calibration data)");

  CHECK(choose_eight_bit(ws, f4, 1.0).eight_bit.empty());
  CHECK(choose_eight_bit(ws, f4, 0.0).eight_bit.size() == 3);
}
