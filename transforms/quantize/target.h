// Deployment targets of the quantize stage: which layout of QuantizeLinear/DequantizeLinear a
// runtime turns into integer kernels. One table (quantize/target.cpp), read in one place by the
// stage; nothing else in the stage branches on the target's name.
//
//   generic   QDQ on the inputs of the weighted ops (Conv, ConvTranspose, Gemm, MatMul), per-channel
//             scales on depthwise inputs: the most accurate layout, and what mcc's own cpu
//             backend fuses; ONNX Runtime and OpenVINO run its convolutions in float.
//   ort       ONNX Runtime (CPU): QDQ around every op its QDQ fusion turns into an integer kernel
//             (QLinearConv/MatMul/Add/Mul/Sigmoid/Concat/AveragePool, and the DQ -> MaxPool,
//             Resize, Reshape, Transpose -> Q groups it drops to int8 when both sides share one
//             scale), so a Conv's output is quantized where its reader runs in int8; activations
//             one scale per tensor (QLinearConv's x and y parameters are scalars).
//   openvino  OpenVINO (CPU): QDQ on the inputs of the weighted ops and of Add/Concat/pooling,
//             where its low-precision transformations run int8 and fuse the float activations
//             between them into the convolutions; one symmetric int8 scale per activation tensor
//             (YOLOX-nano, 2-core Xeon: uint8 with zero points ran 1.42x the float model, int8 1.06x).
// The default is ort: ONNX Runtime is the runtime most deployments of an ONNX file use, and
// mcc's own backend runs the ort layout as well as the generic one.
#pragma once
#include <string>
#include <vector>

#include "transforms/quantize/policy.h"

namespace mcc::transforms::quantize {

struct Target {
  std::string name;
  /// Ops whose float inputs get QDQ when op_types is left empty.
  OpSet op_types;
  /// Ops without weights that keep QDQ on their inputs only while their output is quantized too
  /// (their integer kernel needs both sides); dropped otherwise, repeatedly, so a chain that ends
  /// in float (a detection head) stays float rather than paying for QDQ it cannot use.
  OpSet need_quantized_output;
  /// Ops whose output takes its input's scale (one shared-scale group): runtimes drop a
  /// DequantizeLinear -> op -> QuantizeLinear with equal parameters and run the op on int8.
  OpSet same_scale_output;
  /// Activations produced by these ops stay float where they feed a quantized op: OpenVINO 2026.4
  /// fails to compile (constant folding, `convert->constant_fold`) MiniLM-L6 whose attention
  /// MatMuls read quantized Transpose outputs once some projections stay float (the accuracy
  /// ladder's mixed step); all-int8 it compiles and runs 4 % faster with them quantized.
  OpSet float_inputs_from;
  /// Add/Mul with a one-element constant operand (a scalar affine step: PP-LCNet's learnable
  /// scale and shift after every activation) get no QDQ of their own: they run float between the
  /// DequantizeLinear of their input and the QuantizeLinear of the next quantized op, one rounding
  /// for the chain instead of one per step (PP-OCRv4 det all int8 in ONNX Runtime: text-map cosine
  /// 0.51 -> 0.80 on the 22 of 40 COCO photos with text).
  bool float_scalar_steps = false;
  /// The first convolution on an RGB input, its activation steps and the layer reading their output
  /// run float (quantize/image_stem.h): no slower in ONNX Runtime, and they carry much of a vision
  /// model's rounding error (EfficientNet-Lite0: RMS logit error 0.081 -> 0.064).
  bool float_image_stem = false;
  /// Per-channel activation scales on depthwise inputs allowed (depthwise_per_channel).
  bool per_channel_activations = true;
  /// Static activations' type (activation_type=target): int8 is symmetric, uint8 asymmetric.
  ir::DType activation = ir::DType::U8;
  /// The measured fallback (mixed_target, keep_float_top) joins float activations at most this many
  /// quantized ones apart into one float run (0: each kept activation alone). ONNX Runtime pays
  /// each boundary between its NHWC int8 kernels and NCHW float ones with a Transpose and a Q/DQ
  /// pair: YOLOX-nano with 74 scattered float activations ran 2.44x its float model.
  int64_t float_run_gap = 0;
  /// A weighted op (Conv, Gemm, MatMul) whose activation input stays float keeps its weight and
  /// bias float too: the runtime runs such a layer in float anyway, and ONNX Runtime does not fold
  /// a DequantizeLinear on a weight, so the weight would be dequantized on every run and the layer
  /// would miss its float layout (NCHWc) kernels: YOLOX-nano with its first 29 activations float
  /// ran 1.12x its float model with int8 weights there, 0.90x with float ones.
  bool float_weights_beside_float_input = false;
  /// mode=weight_only's default form: matmul_nbits or qdq.
  std::string weight_format = "qdq";
};

/// The target named `name`; UsageError naming the known ones otherwise.
const Target& find_target(const std::string& name);
/// The known target names, in table order (the option's choices).
std::vector<std::string> target_names();

}  // namespace mcc::transforms::quantize
