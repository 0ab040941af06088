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

/// One quantization point. Forms apply_plan writes: static activations (u8/i8/u16/i16, one
/// scale), weights (i8, per tensor or per channel along `axis`), biases (i32), and dynamic u8
/// activations with the int8 weights of the MatMul/Gemm `consumers` that read them
/// (quantize/apply_dynamic.h), block-wise int4/uint4/int8/uint8 MatMul weights of
/// mode=weight_only (quantize/weight_only.h; DequantizeLinear with block_size, or
/// com.microsoft.MatMulNBits with Plan::matmul_nbits), and int8 embedding tables gathered as
/// codes (`gathered`). A block-wise or 4-bit form on anything but
/// a weight is refused (UnsupportedError).
struct QPoint {
  std::string tensor;              // original value name (kept by the dequantized value)
  Role role = Role::Activation;
  bool dynamic = false;            // activation quantized at run time from its own range: no
                                   // calibrated scale, zero point or range are recorded
  bool per_token = false;          // dynamic point with one run-time range per row (last axis):
                                   // each row is centred and scaled to [-1, 1] before
                                   // DynamicQuantizeLinear, its readers undo it
                                   // (quantize/apply_dynamic.h); unset: one range per tensor
  bool row_ends_on_codes = false;  // per_token rows mapped to [-1, 127/128], so their ends land on
                                   // codes 0 and 255 exactly (unset: [-1, 1], the form before,
                                   // whose ends fall halfway between two codes)
  bool gathered = false;           // embedding table (int8 weight, axis 1 or per tensor) whose
                                   // consumers, axis-0 Gathers, read the codes and are each
                                   // followed by a DequantizeLinear (quantize/apply_gather.h);
                                   // unset: the table is dequantized before the Gathers
  ir::DType dtype = ir::DType::U8; // u8/i8/u16/i16 activations, i8/i4/u4 weights, i32 biases
  int axis = -1;                   // -1: one scale for the tensor
  int64_t block_size = 0;          // > 0: block-wise along `axis`, one scale per block_size
                                   // elements of that axis; scale/zero_point hold the blocks
                                   // flat, row-major over the tensor's shape with that dimension
                                   // divided by block_size (rounded up)
  std::vector<float> scale;        // empty for dynamic points
  std::vector<int32_t> zero_point;
  std::vector<double> lo, hi;      // calibrated (activations) or observed (weights) range, per scale
  std::string method;              // activations: calibration method; weights: minmax; bias: derived
  std::vector<std::string> consumers;  // nodes that read the dequantized value
  int group = -1;                  // shared-scale group index
  std::string note;                // e.g. the bias overflow guard's decision
  std::string codes;               // weights whose codes are not round(W / scale) + zero point
                                   // (GPTQ): the codes as the quantized tensor's bytes (4-bit
                                   // packed two per byte, low nibble first); empty otherwise
};

struct Plan {
  int64_t opset_from = 0, opset_to = 0;  // ai.onnx opset import before/after (equal: unchanged)
  int64_t ir_from = 0, ir_to = 0;
  std::vector<QPoint> points;            // in application order
  std::vector<std::vector<std::string>> groups;
  bool matmul_nbits = false;             // block-wise weights written as com.microsoft.MatMulNBits
};

/// Applies the plan: raises the opset/IR version, writes dynamic points first
/// (DynamicQuantizeLinear → MatMulInteger → Cast → Mul), then block-wise weights and gathered
/// embedding tables (Gather → DequantizeLinear), inserts QuantizeLinear→DequantizeLinear
/// on static activations and replaces other weights and biases by quantized initializers +
/// DequantizeLinear.
/// Throws ModelError when a point names a tensor the model lacks or that does not fit, and
/// UnsupportedError, before changing the model, for a point form it cannot write yet (see QPoint).
void apply_plan(ir::Model& model, const Plan& plan);

/// The point's record entry. Keys of the newer forms ("dynamic", "per_token", "gathered", "block_size") are
/// written only when set, so records of 8/16-bit static points keep their bytes.
nlohmann::ordered_json point_to_json(const QPoint& p);
/// Inverse of point_to_json; ModelError for an entry that is not a valid point.
QPoint point_from_json(const nlohmann::ordered_json& j);

/// uint16/int16: 16-bit activations.
inline bool is_16bit(ir::DType d) { return d == ir::DType::U16 || d == ir::DType::I16; }
/// int8/int16 activations, which are quantized symmetrically (zero point 0).
inline bool is_signed_activation(ir::DType d) { return d == ir::DType::I8 || d == ir::DType::I16; }

/// Scale and zero point of an activation range [lo, hi] (lo <= 0 <= hi) for dtype `dt`
/// (u8/i8/u16/i16); symmetric = zero point 0 (signed) or the mid code (unsigned).
void activation_params(double lo, double hi, ir::DType dt, bool symmetric, float& scale, int32_t& zero_point);

/// Int8 value of w / scale, rounded half to even and clamped to [-127, 127].
int8_t quantize_weight(float w, float scale);
/// Int32 value of b / scale, rounded half to even (caller checks the range).
int64_t quantize_bias_value(float b, float scale);

}  // namespace mcc::transforms::quantize
