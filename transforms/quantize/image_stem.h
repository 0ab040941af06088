// The image stem of a vision model: the first convolution, reading the model's input colour image
// (kImageStemChannels = 3 channels), and the elementwise activation steps after it (the value-wise
// ops of ir/op_facts: Relu, Clip, HardSwish, Sigmoid, ...; SiLU's Mul, a scalar scale and shift).
//
// Targets with Target::float_image_stem keep it float: the stem convolution, its weights, its
// input and the activation it writes (so the layer reading that activation runs in float too).
// Why, measured with ONNX Runtime 1.32 on a 2-core Xeon: an int8 convolution whose reduction is 3
// channels times the window (27 for a 3x3) gains nothing over the float one (EfficientNet-Lite0
// all int8 0.525x its float time, float stem 0.514x), and the stem's rounding reaches every later
// layer (EfficientNet-Lite0, 160 views of 80 COCO photos not calibrated on: RMS logit error
// against fp32 0.081 all int8, 0.064 with the stem float).
// Does not apply to a convolution reading a computed tensor (YOLOX's space-to-depth Focus stem
// reads a Concat of Slices: 12 channels), to grouped stems, to other channel counts (a gray MNIST
// stem float measured no better: RMS logit error 0.082 against 0.083 all int8 on 500 digits), or
// to a stem convolution an explicit per-layer rule names (the rule decides).
#pragma once
#include <functional>
#include <set>

#include "ir/graph.h"

namespace mcc::transforms::quantize {

/// The input channels of a convolution on a graph input that make it an image stem.
inline constexpr int64_t kImageStemChannels = 3;

struct ImageStem {
  std::set<const ir::Node*> nodes;    // the stem convolutions and their activation steps
  std::set<const ir::Value*> values;  // what they write (stays float)
};

/// The stems of `g`: each Conv whose data input is a graph input, whose constant weight
/// [M, C, kh, kw] has group == 1 and C == kImageStemChannels, and which `ruled` does not claim,
/// with the elementwise steps every non-constant input of which the stem writes.
ImageStem find_image_stem(const ir::Graph& g, const std::function<bool(const ir::Node&)>& ruled);

}  // namespace mcc::transforms::quantize
