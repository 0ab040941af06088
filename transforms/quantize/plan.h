// The quantize stage's plan: every quantization point with its final parameters, the opset
// change and the shared-scale groups. The stage builds a plan (from calibration, or from a saved
// record on replay) and applies it; applying the same plan to the same model always gives the
// same bytes, which is what makes `--state` replay byte-identical.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"

namespace mcc::transforms::quantize {

enum class Role { Activation, Weight, Bias };
const char* role_name(Role r);

struct QPoint {
  std::string tensor;              // original value name (kept by the dequantized value)
  Role role = Role::Activation;
  ir::DType dtype = ir::DType::U8; // u8/i8/u16/i16 activations, i8 weights, i32 biases
  int axis = -1;                   // -1: one scale for the tensor
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
  std::vector<double> lo, hi;      // calibrated (activations) or observed (weights) range, per scale
  std::string method;              // activations: calibration method; weights: minmax; bias: derived
  std::vector<std::string> consumers;  // nodes that read the dequantized value
  int group = -1;                  // shared-scale group index
  std::string note;                // e.g. the bias overflow guard's decision
};

struct Plan {
  int64_t opset_from = 0, opset_to = 0;  // ai.onnx opset import before/after (equal: unchanged)
  int64_t ir_from = 0, ir_to = 0;
  std::vector<QPoint> points;            // in application order
  std::vector<std::vector<std::string>> groups;
};

/// Applies the plan: raises the opset/IR version, inserts QuantizeLinear→DequantizeLinear on
/// activations and replaces weights and biases by quantized initializers + DequantizeLinear.
/// Throws ModelError when a point names a tensor the model lacks or that does not fit.
void apply_plan(ir::Model& model, const Plan& plan);

nlohmann::ordered_json point_to_json(const QPoint& p);
QPoint point_from_json(const nlohmann::ordered_json& j);

/// Scale and zero point of an activation range [lo, hi] (lo <= 0 <= hi) for dtype `dt`
/// (u8/i8/u16/i16); symmetric = zero point 0 (signed) or the mid code (unsigned).
void activation_params(double lo, double hi, ir::DType dt, bool symmetric, float& scale, int32_t& zero_point);

/// Int8 value of w / scale, rounded half to even and clamped to [-127, 127].
int8_t quantize_weight(float w, float scale);
/// Int32 value of b / scale, rounded half to even (caller checks the range).
int64_t quantize_bias_value(float b, float scale);

}  // namespace mcc::transforms::quantize
