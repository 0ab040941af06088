// Data-driven rounding of static int8 weights (quantize{algorithm=gptq}, static mode): the weight
// points keep their scales (per output channel or per tensor, symmetric, -127..127, any bias
// overflow guard already applied), and GPTQ (quantize/gptq.h) chooses the codes: each input
// feature's rounding error is moved onto the features not yet rounded in the way that least
// raises the layer's output error on the calibration data, E||W x - Wq x||^2, from the Hessian
// H = sum x x^T of the layer's float inputs.
//   Conv (1-3 spatial dims, any group): x is one input patch of a group, K = C/group * kernel
//     elements in the weight's order, one Hessian per group (a depthwise conv: one K x K per channel);
//     padded taps are zeros, as the conv reads them.
//   Gemm (transA=0) and MatMul with a [K, N] constant weight: x is one row of input A.
// Rows no calibration sample ever made non-zero are rounded to nearest (a conv channel that the
// calibration photos never excited may be active on others), not zeroed as GPTQ does for LLMs.
// A layer with fewer than 4 calibration rows per input feature keeps nearest codes: its Hessian
// would describe the calibration samples, not the data (EfficientNet-Lite0's classifier sees 16
// rows for 1280 inputs), and is listed in `skipped`.
// Measured (docs/quantize.md#weight-rounding): EfficientNet-Lite0, target=ort, 160 views not
// calibrated on: logits cosine mean 0.99869 -> 0.99888 (min 0.99624 -> 0.99747); YOLOX-nano with a
// fixed layout, 40 photos: 0.97916 -> 0.98035.
// Layers whose bias is corrected (bias_correction=true, quantize/tune.h) get the centered Hessian
// sum (x - m)(x - m)^T: the mean part of their error, sum_k (Wq - W)[o, k] m_k, is removed exactly
// by the bias, computed from the same inputs' means m (a conv's patches, padded taps included, so
// borders are exact too). Without this split, bias correction's estimate from channel means
// (borders ignored) undoes part of what GPTQ gained (tests/transforms/quantize/static_gptq_test.cpp's
// net, held-out output MSE: RTN + correction 0.00152; GPTQ + channel-mean correction 0.00174;
// centered GPTQ + exact correction 0.00127).
// The codes are recorded in the points (base64), so --state replays them with no data, and so are
// the bias corrections. The record holds each weight's proxy loss tr((W-Q)^T H (W-Q)) under GPTQ
// and under round to nearest, on the Hessian GPTQ used.
// Memory: the Hessians (4 K^2 bytes each) are collected in passes of at most hessian_budget bytes
// (quantize/weight_only.h), each pass stopping at its last layer's input.
// Does not apply to: ConvTranspose, Gemm with transA=1, weights read by more than one node,
// weights left float, a layer whose input calibration never produced as float32. Each is listed
// in the record's `skipped` with its reason and keeps round-to-nearest codes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "transforms/pipeline/pass.h"
#include "transforms/quantize/config.h"
#include "transforms/quantize/points.h"
#include "transforms/quantize/select.h"

namespace mcc::transforms::quantize {

struct StaticGptq {
  bool enabled = false;
  int64_t layers = 0;   // weights whose codes GPTQ chose
  int64_t samples = 0;  // calibration samples the Hessians sum over
  nlohmann::ordered_json record = nlohmann::ordered_json::object();  // damp, losses, skipped, calibration
  /// Per weight of a layer with a bias to correct: sum_k (Wq - W)[o, k] * mean(x_k) over its actual
  /// inputs (a conv's patches, padded taps included), for bias correction (quantize/bias.h).
  std::map<std::string, std::vector<double>> shifts;
};

/// Chooses GPTQ codes for the int8 weight points of `pts` (QPoint::codes) from calibration data,
/// when cfg asks for algorithm=gptq in static mode; otherwise returns {enabled = false}.
StaticGptq round_weights_gptq(const ir::Model& model, const Selection& sel, Points& pts, const Config& cfg,
                              const PassContext& ctx);

}  // namespace mcc::transforms::quantize
