// The op lists of mixed-precision conversion (see op_policy.h), each entry with its reason.
// Ops in no list are "unlisted": the fp16 stage keeps them in float32 unless
// fp16{unlisted=widest} is given, so a new or exotic op never loses precision silently.
#include "transforms/fp16/op_policy.h"

#include "ir/errors.h"

namespace mcc::transforms::fp16 {

const OpSet& fp16_ops() {
  static const OpSet s{
      // Matrix products and convolutions: the bulk of the FLOPs and bytes; fp16 halves both and
      // runtimes accumulate in wider types.
      "Conv", "ConvTranspose", "MatMul", "Gemm", "Einsum",
      // Recurrent cells are built from the same matrix products.
      "LSTM", "GRU", "RNN",
      // A causal 1-D convolution carrying its state: a Conv.
      "CausalConvWithState",
  };
  return s;
}

const OpSet& fp32_ops() {
  static const OpSet s{
      // exp overflows fp16 for x > 11.1; log/pow/reciprocal amplify the relative error of their
      // input or overflow for small inputs.
      "Exp", "Log", "Pow", "Reciprocal", "Softplus",
      // Sinh/Cosh are exponentials (overflow for |x| > 11.8); Tan has poles; Asin/Acos/Atanh
      // (near +-1) and Acosh (near 1) have unbounded derivatives, so the input's fp16 rounding
      // (5e-4 there) moves the output by far more.
      "Sinh", "Cosh", "Tan", "Asin", "Acos", "Atanh", "Acosh",
      // Products of many terms overflow or underflow: a determinant, a running product.
      "Det", "CumProd",
      // Softmax-family: exponentials and a normalising sum over a whole axis.
      "Softmax", "LogSoftmax", "Hardmax",
      // Reductions: sums of many terms lose bits (and sums of squares overflow) in fp16.
      "ReduceSum", "ReduceMean", "ReduceProd", "ReduceSumSquare", "ReduceL1", "ReduceL2",
      "ReduceLogSum", "ReduceLogSumExp", "CumSum",
      // Normalizations compute a variance (a mean of squares) and divide by its square root.
      "LayerNormalization", "GroupNormalization", "InstanceNormalization", "LpNormalization",
      "MeanVarianceNormalization", "LpPool", "GlobalLpPool", "RMSNormalization",
      // LRN divides by a sum of squares over neighbouring channels.
      "LRN",
      // Attention: a softmax over the sequence and long dot products (or a running state).
      "Attention", "LinearAttention",
      // Fourier transforms sum over a whole signal.
      "DFT", "STFT",
      // Coordinates and orderings: fp16 rounding moves boxes or changes which element wins.
      "NonMaxSuppression", "RoiAlign", "MaxRoiPool", "TopK", "Range",
      // Sampling coordinates (and DeformConv's offsets, which share the data's type): fp16
      // rounding moves the sample points.
      "GridSample", "AffineGrid", "DeformConv",
      // Value identity: rounding merges distinct values (Unique), underflow turns values below
      // 6e-8 into zeros (NonZero).
      "Unique", "NonZero",
      // Losses: logs of probabilities.
      "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss",
  };
  return s;
}

const OpSet& widest_ops() {
  static const OpSet s{
      // Elementwise arithmetic and comparisons (several inputs of one type).
      "Add", "Sub", "Mul", "Div", "Sum", "Mean", "Max", "Min", "Mod", "Where", "PRelu", "Clip",
      "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual",
      // Bounded or monotone activations: exact or well-conditioned in fp16.
      "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", "Selu", "Celu",
      "ThresholdedRelu", "Softsign", "Erf", "Abs", "Neg", "Sign", "Floor", "Ceil", "Round",
      "Sqrt", "Sin", "Cos", "IsNaN", "IsInf", "Shrink", "Atan", "Asinh",
      // Smooth, bounded-slope activations of the Sigmoid/Tanh family: Gelu = x*Phi(x) (erf or
      // tanh), Swish = x*sigmoid(alpha*x). Mish = x*tanh(softplus(x)): its exp may overflow in
      // fp16 but only saturates tanh to 1 (Mish(x) -> x, the right limit), unlike a bare
      // Softplus, whose output would become inf.
      "Gelu", "Swish", "Mish",
      // Rotary position embedding: x*cos + rotate(x)*sin with cached tables in [-1, 1].
      "RotaryEmbedding",
      // Data movement: no arithmetic.
      "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Slice", "Gather",
      "GatherElements", "GatherND", "ScatterElements", "ScatterND", "Split", "Concat", "Pad",
      "Tile", "Expand", "Identity", "Dropout", "DepthToSpace", "SpaceToDepth", "Compress",
      "ReverseSequence", "Trilu", "OneHot", "Scatter", "TensorScatter", "CenterCropPad",
      "MaxUnpool",
      // Col2Im adds a few overlapping patches per output element.
      "Col2Im",
      // Pooling and resampling: max is exact; averages and interpolation weight a few neighbours.
      "MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool", "Resize", "Upsample",
      "ReduceMax", "ReduceMin", "ArgMax", "ArgMin",
      // Inference BatchNormalization is an affine map per channel (usually folded into Conv).
      "BatchNormalization",
      // Type-agnostic: they read only shapes, or their output type is an attribute.
      "Shape", "Size", "Cast", "CastLike", "EyeLike",
  };
  return s;
}

const std::vector<ConditionalRule>& conditional_fp32_rules() {
  static const std::vector<ConditionalRule> rules{
      {"Resize", "coordinate_transformation_mode", {"tf_crop_and_resize"},
       "roi coordinates would be rounded to fp16 (about 5e-4 of the image), shifting crops"},
      {"BatchNormalization", "training_mode", {"1"},
       "training mode computes batch mean and variance (reductions)"},
  };
  return rules;
}

const OpSet& control_flow_ops() {
  static const OpSet s{"If", "Loop", "Scan"};
  return s;
}

const std::map<std::string, std::string, std::less<>>& deliberately_unclassified() {
  static const auto m = [] {
    std::map<std::string, std::string, std::less<>> out;
    auto add = [&](std::initializer_list<const char*> ops, const char* why) {
      for (const char* op : ops) out.emplace(op, why);
    };
    add({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
         "QLinearMatMul", "ConvInteger", "MatMulInteger"},
        "quantized arithmetic: integer data; float slots are quantization scales, which fp16 "
        "would round (moving the quantization grid)");
    add({"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform",
         "RandomUniformLike"},
        "random generator: the output type is an attribute; sampling ops stay as the model has them");
    add({"BlackmanWindow", "HammingWindow", "HannWindow", "MelWeightMatrix", "ConstantOfShape"},
        "generator: its inputs are sizes or frequencies, the output type is an attribute");
    add({"Constant"}, "no inputs: its value is converted as a constant of the nodes it feeds");
    add({"ConcatFromSequence", "Optional", "OptionalGetElement", "OptionalHasElement", "SequenceAt",
         "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength",
         "SequenceMap", "SplitToSequence"},
        "sequence or optional values: the stage converts plain tensors only");
    add({"And", "Or", "Xor", "Not", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
         "BitwiseNot"},
        "bool or integer data only");
    add({"BitCast"}, "reinterprets bits: converting its input would change the bits it reinterprets");
    add({"StringConcat", "StringNormalizer", "StringSplit", "RegexFullMatch", "TfIdfVectorizer",
         "ImageDecoder"},
        "string or encoded-byte input: no float data to convert");
    return out;
  }();
  return m;
}

std::string ConditionalRule::to_string() const {
  std::string s = op + ":" + attr + ":";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? "|" : "") + values[i];
  return s;
}

ConditionalRule ConditionalRule::parse(std::string_view text) {
  const auto a = text.find(':');
  const auto b = a == std::string_view::npos ? a : text.find(':', a + 1);
  if (a == std::string_view::npos || b == std::string_view::npos || a == 0 || b == a + 1 || b + 1 >= text.size())
    throw UsageError("conditional rule '" + std::string(text) +
                     "' is not of the form Op:attribute:value1|value2 (e.g. "
                     "Resize:coordinate_transformation_mode:tf_crop_and_resize)");
  ConditionalRule r;
  r.op = std::string(text.substr(0, a));
  r.attr = std::string(text.substr(a + 1, b - a - 1));
  std::string_view rest = text.substr(b + 1);
  while (true) {
    const auto p = rest.find('|');
    std::string v(rest.substr(0, p));
    if (v.empty()) throw UsageError("conditional rule '" + std::string(text) + "' has an empty value");
    r.values.push_back(std::move(v));
    if (p == std::string_view::npos) break;
    rest = rest.substr(p + 1);
  }
  r.why = "user rule";
  return r;
}

std::string ConditionalRule::match(const ir::Node& n) const {
  if (n.op_type != op) return {};
  const ir::Attribute* a = n.attr(attr);
  if (!a) return {};
  std::string text;
  if (const auto* i = std::get_if<int64_t>(&a->value)) text = std::to_string(*i);
  else if (const auto* s = std::get_if<std::string>(&a->value)) text = *s;
  else return {};
  for (const auto& v : values)
    if (v == text) return attr + "=" + text;
  return {};
}

}  // namespace mcc::transforms::fp16
