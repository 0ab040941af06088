// quantize options read into a Config: defaults, derived flags, and each UsageError with its message.
#include <doctest/doctest.h>

#include "ir/errors.h"
#include "transforms/quantize/config.h"
#include "transforms/quantize/quantize.h"

using namespace mcc;
using transforms::quantize::read_config;

namespace {

transforms::quantize::Config config(std::vector<std::pair<std::string, std::string>> opts) {
  const auto pass = transforms::quantize::make_pass();
  return read_config(transforms::Options(pass->info(), std::move(opts)));
}

std::string error_of(std::vector<std::pair<std::string, std::string>> opts) {
  try {
    config(std::move(opts));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("quantize config: defaults and derived settings") {
  const auto d = config({});
  CHECK(d.method == "minmax");
  CHECK_FALSE(d.auto_method);
  CHECK_FALSE(d.measured);
  CHECK_FALSE(d.wide_fallback);
  CHECK(d.select.defaults.per_channel);
  CHECK(d.select.defaults.activation == ir::DType::U8);
  CHECK(d.sensitivity_samples == 4);
  CHECK(d.symmetric(ir::DType::I8));
  CHECK_FALSE(d.symmetric(ir::DType::U8));

  const auto m = config({{"method", "auto"}, {"keep_float_top", "2"}, {"mixed_fallback", "16bit"},
                         {"activation_type", "int16"}, {"symmetric_activations", "true"}});
  CHECK(m.auto_method);
  CHECK(m.select.defaults.method == transforms::quantize::CalibMethod::MinMax);
  CHECK(m.measured);
  CHECK(m.wide_fallback);
  CHECK(m.select.defaults.activation == ir::DType::I16);
  CHECK(m.symmetric(ir::DType::U16));
  // mixed_fallback=16bit alone changes nothing: no search asks for a fallback.
  CHECK_FALSE(config({{"mixed_fallback", "16bit"}, {"method", "auto"}}).wide_fallback);
}

TEST_CASE("quantize config: out-of-range values are UsageErrors, first one wins") {
  CHECK(error_of({{"percentile", "40"}, {"samples", "-1"}}) == "quantize: percentile must be in (50, 100], got 40.000000");
  CHECK(error_of({{"samples", "-1"}, {"mixed_target", "2"}}) == "quantize: samples must be >= 0");
  CHECK(error_of({{"mixed_target", "2"}}) == "quantize: mixed_target must be in [0, 1]");
  CHECK(error_of({{"keep_float_top", "-1"}}) == "quantize: keep_float_top must be >= 0");
  CHECK(error_of({{"sensitivity_samples", "0"}}) == "quantize: sensitivity_samples must be >= 1");
  CHECK(error_of({{"mixed_target", "0.9"}, {"keep_float_top", "1"}}) == "quantize: set mixed_target or keep_float_top, not both");
  CHECK(error_of({{"widen_below_db", "-1"}}) == "quantize: widen_below_db must be >= 0");
  CHECK(error_of({}).empty());
}
