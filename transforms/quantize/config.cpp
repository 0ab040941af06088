// Reading and checking the quantize stage's options (see quantize/config.h).
#include "transforms/quantize/config.h"

#include "ir/errors.h"

namespace mcc::transforms::quantize {

namespace {

ir::DType parse_activation_type(const std::string& s) {
  if (s == "uint8") return ir::DType::U8;
  if (s == "int8") return ir::DType::I8;
  if (s == "uint16") return ir::DType::U16;
  return ir::DType::I16;
}

}  // namespace

Config read_config(const Options& o) {
  Config c;
  c.percentile = o.get_float("percentile");
  if (!(c.percentile > 50 && c.percentile <= 100))
    throw UsageError("quantize: percentile must be in (50, 100], got " + std::to_string(c.percentile));
  c.samples = o.get_int("samples");
  if (c.samples < 0) throw UsageError("quantize: samples must be >= 0");
  c.holdout = o.get_int("holdout");
  if (c.holdout < 0) throw UsageError("quantize: holdout must be >= 0");

  c.select.op_types = o.get_list("op_types");
  c.select.defaults.per_channel = o.get_bool("per_channel");
  c.select.defaults.activation = parse_activation_type(o.get_string("activation_type"));
  c.method = o.get_string("method");
  c.auto_method = c.method == "auto";
  c.select.defaults.method = c.auto_method ? CalibMethod::MinMax : parse_calib_method(c.method);
  c.mixed_target = o.get_float("mixed_target");
  c.keep_top = o.get_int("keep_float_top");
  c.sensitivity_samples = o.get_int("sensitivity_samples");
  if (!(c.mixed_target >= 0 && c.mixed_target <= 1)) throw UsageError("quantize: mixed_target must be in [0, 1]");
  if (c.keep_top < 0) throw UsageError("quantize: keep_float_top must be >= 0");
  if (c.sensitivity_samples < 1) throw UsageError("quantize: sensitivity_samples must be >= 1");
  if (c.mixed_target > 0 && c.keep_top > 0) throw UsageError("quantize: set mixed_target or keep_float_top, not both");
  const std::string& fallback = o.get_string("mixed_fallback");
  if (fallback != "float" && fallback != "16bit")
    throw UsageError("quantize: mixed_fallback must be float or 16bit, got '" + fallback + "'");
  c.measured = c.auto_method || c.mixed_target > 0 || c.keep_top > 0;
  // 16-bit fallback: a unit left out of 8 bits gets 16 bits with its minmax range.
  c.wide_fallback = fallback == "16bit" && (c.mixed_target > 0 || c.keep_top > 0);
  c.symmetric_unsigned = o.get_bool("symmetric_activations");
  c.widen_db = o.get_float("widen_below_db");
  if (c.widen_db < 0) throw UsageError("quantize: widen_below_db must be >= 0");

  c.calib = o.get_string("calib");
  c.quantize_bias = o.get_bool("quantize_bias");
  c.depthwise_per_channel = o.get_bool("depthwise_per_channel");
  c.bias_correction = o.get_bool("bias_correction");

  const std::string& mode = o.get_string("mode");
  if (mode != "static" && mode != "dynamic") throw UsageError("quantize: mode must be static or dynamic, got '" + mode + "'");
  c.dynamic = mode == "dynamic";
  c.embeddings = o.get_bool("embeddings");
  if (c.embeddings && !c.dynamic) throw UsageError("quantize: embeddings=true needs mode=dynamic");
  if (c.dynamic) {
    // Run-time quantization has no calibrated ranges to choose or measure.
    if (c.select.defaults.activation != ir::DType::U8)
      throw UsageError("quantize: mode=dynamic quantizes activations to uint8 (DynamicQuantizeLinear); drop activation_type");
    if (c.measured || c.widen_db > 0)
      throw UsageError("quantize: mode=dynamic measures nothing; drop method=auto, mixed_target, keep_float_top and widen_below_db");
  }
  return c;
}

}  // namespace mcc::transforms::quantize
