// The op facts table (see op_facts.h): one line per ai.onnx op, sorted by name, with a short
// reason where a fact is not obvious, and the table of the meaning changes a raise of the opset
// rewrites. Nothing else in mcc keeps a private list of these facts.
//
// Columns:
//   shape     ShapeKind: how the first output's shape follows from the inputs (ir/shape_inference
//             holds the rules; `Own` ops have a rule of their own there).
//   channels  Through: structured pruning follows channels straight through (elementwise on one
//             data input, or pooling over spatial axes); Other: mixes channels or is handled on
//             its own (BatchNormalization, Concat, Add, ...).
//   W         the op usually has learned-parameter inputs (weights); `_` = none.
//   raise     schema version from which raising the opset up to 13 keeps the meaning as the node
//             stands: the schema changes up to 13 only widen types, make an input optional, allow
//             negative axes or add attributes whose defaults keep the old behaviour. 0 = changed
//             meaning with no rewrite, or not checked: a raise across a schema change is refused.
//             Older versions of an op with rows in kRaiseRewrites are raised through those
//             rewrites (raise_compatible_from counts them).
//   after13   opset (14..21) at which an op with `raise` changed meaning. Changes from 14 to 21 of
//             the ops with `raise` all widen types (bfloat16, float8, int4, uint16 QDQ), add
//             optional inputs (Pad axes) or add attributes whose defaults keep the old behaviour
//             (Resize antialias/axes/keep_aspect_ratio_policy, Reshape allowzero=0, AveragePool
//             dilations, Shape start/end, Cast saturate, QuantizeLinear block_size/output_dtype,
//             BatchNormalization training_mode=0) -- except the Reduce ops, whose 'axes'
//             attribute became an input at opset 18, and Split, which needs num_outputs from 18
//             when no split sizes are given: both are rewritten (kRaiseRewrites). 0 = none.
//
// kRaiseRewrites, one row per schema change that altered an op's meaning in a way a local
// rewrite of the node expresses (transforms/common/opset_upgrade.h writes them): `at` is the
// schema version whose form the node gets, `oldest` the oldest version the rewrite takes (the
// changes between `oldest` and `at` keep the meaning), `becomes` the new op type when it
// changes. Checked against the ONNX schemas by tests/transforms/op_classification_test.cpp.
// Changes left out (a raise across them is refused): Cast-1's string `to`, Concat-1's optional
// axis, consumed_inputs of the other opset-1 ops, Split-1's split input, Resize-11's
// tf_half_pixel_for_nn at 13.
#include "ir/op_facts.h"

#include <algorithm>
#include <iterator>

namespace mcc::ir {
namespace {

using enum ShapeKind;
using enum Channels;
constexpr bool W = true, _ = false;

constexpr OpFacts kTable[] = {
    // op                         shape          channels W raise after13 reason
    {"Abs",                       Same,          Through, _,  6,  0, ""},
    {"Acos",                      Same,          Through, _,  0,  0, ""},
    {"Acosh",                     Same,          Through, _,  0,  0, ""},
    {"Add",                       Broadcast,     Other,   _,  7,  0, ""},
    {"AffineGrid",                None,          Other,   _,  0,  0, ""},
    {"And",                       BroadcastBool, Other,   _,  7,  0, ""},
    {"ArgMax",                    Own,           Other,   _,  1,  0, "one axis (attribute); int64"},
    {"ArgMin",                    Own,           Other,   _,  1,  0, "one axis (attribute); int64"},
    {"Asin",                      Same,          Through, _,  0,  0, ""},
    {"Asinh",                     Same,          Through, _,  0,  0, ""},
    {"Atan",                      Same,          Through, _,  0,  0, ""},
    {"Atanh",                     Same,          Through, _,  0,  0, ""},
    {"Attention",                 None,          Other,   _,  0,  0, ""},
    {"AveragePool",               Own,           Through, _,  7,  0, "pools spatial axes only"},
    {"BatchNormalization",        Same,          Other,   W,  9,  0, "prune cuts its parameters"},
    {"Bernoulli",                 None,          Other,   _,  0,  0, "element type from `dtype`"},
    {"BitCast",                   None,          Other,   _,  0,  0, ""},
    {"BitShift",                  Broadcast,     Other,   _,  0,  0, ""},
    {"BitwiseAnd",                Broadcast,     Other,   _,  0,  0, ""},
    {"BitwiseNot",                Same,          Other,   _,  0,  0, ""},
    {"BitwiseOr",                 Broadcast,     Other,   _,  0,  0, ""},
    {"BitwiseXor",                Broadcast,     Other,   _,  0,  0, ""},
    {"BlackmanWindow",            None,          Other,   _,  0,  0, ""},
    {"Cast",                      Own,           Through, _,  6,  0, "element type from `to`"},
    {"CastLike",                  Own,           Other,   _,  0,  0, "element type of input 1"},
    {"CausalConvWithState",       None,          Other,   W,  0,  0, ""},
    {"Ceil",                      Same,          Through, _,  6,  0, ""},
    {"Celu",                      Same,          Through, _,  0,  0, ""},
    {"CenterCropPad",             None,          Other,   _,  0,  0, ""},
    {"Clip",                      Same,          Through, _, 11,  0, "prune: scalar min/max only"},
    {"Col2Im",                    None,          Other,   _,  0,  0, ""},
    {"Compress",                  None,          Other,   _,  0,  0, "data-dependent"},
    {"Concat",                    Own,           Other,   _,  4,  0, ""},
    {"ConcatFromSequence",        None,          Other,   _,  0,  0, "sequence or optional values"},
    {"Constant",                  None,          Other,   _,  1,  0, "declared type is used"},
    {"ConstantOfShape",           Own,           Other,   _,  9,  0, ""},
    {"Conv",                      Own,           Other,   W,  1,  0, ""},
    {"ConvInteger",               None,          Other,   W,  0,  0, ""},
    {"ConvTranspose",             None,          Other,   W,  1,  0, "not modelled (output_shape)"},
    {"Cos",                       Same,          Through, _,  0,  0, ""},
    {"Cosh",                      Same,          Through, _,  0,  0, ""},
    {"CumProd",                   Same,          Other,   _,  0,  0, ""},
    {"CumSum",                    Same,          Other,   _,  0,  0, ""},
    {"DFT",                       None,          Other,   _,  0,  0, ""},
    {"DeformConv",                None,          Other,   W,  0,  0, ""},
    {"DepthToSpace",              None,          Other,   _,  1,  0, ""},
    {"DequantizeLinear",          None,          Other,   _, 10,  0, ""},
    {"Det",                       None,          Other,   _,  0,  0, ""},
    {"Div",                       Broadcast,     Other,   _,  7,  0, ""},
    {"Dropout",                   Own,           Through, _, 12,  0, "mask is bool from opset 10"},
    {"DynamicQuantizeLinear",     None,          Other,   _,  0,  0, ""},
    {"Einsum",                    None,          Other,   _,  0,  0, ""},
    {"Elu",                       Same,          Through, _,  6,  0, ""},
    {"Equal",                     BroadcastBool, Other,   _,  7,  0, ""},
    {"Erf",                       Same,          Through, _,  9,  0, ""},
    {"Exp",                       Same,          Through, _,  6,  0, ""},
    {"Expand",                    Own,           Other,   _,  8,  0, ""},
    {"EyeLike",                   None,          Other,   _,  0,  0, "element type from `dtype`"},
    {"Flatten",                   Own,           Other,   _,  1,  0, ""},
    {"Floor",                     Same,          Through, _,  6,  0, ""},
    {"GRU",                       None,          Other,   W,  0,  0, ""},
    {"Gather",                    Own,           Other,   W,  1,  0, "embedding tables"},
    {"GatherElements",            None,          Other,   _,  0,  0, ""},
    {"GatherND",                  None,          Other,   _, 11,  0, ""},
    {"Gelu",                      Same,          Through, _,  0,  0, ""},
    {"Gemm",                      Own,           Other,   W,  7,  0, ""},
    {"GlobalAveragePool",         Own,           Through, _,  1,  0, "pools spatial axes only"},
    {"GlobalLpPool",              Own,           Through, _,  0,  0, "pools spatial axes only"},
    {"GlobalMaxPool",             Own,           Through, _,  1,  0, "pools spatial axes only"},
    {"Greater",                   BroadcastBool, Other,   _,  7,  0, ""},
    {"GreaterOrEqual",            BroadcastBool, Other,   _,  0,  0, ""},
    {"GridSample",                None,          Other,   _,  0,  0, ""},
    {"GroupNormalization",        Same,          Other,   W,  0,  0, ""},
    {"HammingWindow",             None,          Other,   _,  0,  0, ""},
    {"HannWindow",                None,          Other,   _,  0,  0, ""},
    {"HardSigmoid",               Same,          Through, _,  6,  0, ""},
    {"HardSwish",                 Same,          Through, _,  0,  0, ""},
    {"Hardmax",                   Same,          Other,   _, 13,  0, ""},
    {"Identity",                  Same,          Through, _,  1,  0, ""},
    {"If",                        None,          Other,   _,  0,  0, ""},
    {"ImageDecoder",              None,          Other,   _,  0,  0, ""},
    {"InstanceNormalization",     Same,          Other,   W,  6,  0, "prune cuts its parameters"},
    {"IsInf",                     SameBool,      Other,   _,  0,  0, ""},
    {"IsNaN",                     SameBool,      Other,   _,  0,  0, ""},
    {"LRN",                       Same,          Other,   _,  1,  0, "normalizes across channels"},
    {"LSTM",                      None,          Other,   W,  0,  0, ""},
    {"LayerNormalization",        Same,          Other,   W,  0,  0, ""},
    {"LeakyRelu",                 Same,          Through, _,  6,  0, ""},
    {"Less",                      BroadcastBool, Other,   _,  7,  0, ""},
    {"LessOrEqual",               BroadcastBool, Other,   _,  0,  0, ""},
    {"LinearAttention",           None,          Other,   _,  0,  0, ""},
    {"Log",                       Same,          Through, _,  6,  0, ""},
    {"LogSoftmax",                Same,          Other,   _, 13,  0, ""},
    {"Loop",                      None,          Other,   _,  0,  0, ""},
    {"LpNormalization",           Same,          Other,   _,  0,  0, ""},
    {"LpPool",                    Own,           Through, _,  0,  0, "pools spatial axes only"},
    {"MatMul",                    Own,           Other,   W,  1,  0, ""},
    {"MatMulInteger",             None,          Other,   W,  0,  0, ""},
    {"Max",                       Broadcast,     Other,   _,  8,  0, ""},
    {"MaxPool",                   Own,           Through, _,  8,  0, "pools spatial axes only"},
    {"MaxRoiPool",                None,          Other,   _,  0,  0, ""},
    {"MaxUnpool",                 None,          Other,   _,  0,  0, ""},
    {"Mean",                      Broadcast,     Other,   _,  8,  0, ""},
    {"MeanVarianceNormalization", Same,          Other,   _,  0,  0, ""},
    {"MelWeightMatrix",           None,          Other,   _,  0,  0, ""},
    {"Min",                       Broadcast,     Other,   _,  8,  0, ""},
    {"Mish",                      Same,          Through, _,  0,  0, ""},
    {"Mod",                       Broadcast,     Other,   _,  0,  0, ""},
    {"Mul",                       Broadcast,     Other,   _,  7,  0, ""},
    {"Multinomial",               None,          Other,   _,  0,  0, ""},
    {"Neg",                       Same,          Through, _,  6,  0, ""},
    {"NegativeLogLikelihoodLoss", None,          Other,   _,  0,  0, ""},
    {"NonMaxSuppression",         None,          Other,   _,  0,  0, "data-dependent"},
    {"NonZero",                   None,          Other,   _,  0,  0, "data-dependent"},
    {"Not",                       SameBool,      Other,   _,  1,  0, ""},
    {"OneHot",                    None,          Other,   _,  9,  0, ""},
    {"Optional",                  None,          Other,   _,  0,  0, "sequence or optional values"},
    {"OptionalGetElement",        None,          Other,   _,  0,  0, "sequence or optional values"},
    {"OptionalHasElement",        None,          Other,   _,  0,  0, "sequence or optional values"},
    {"Or",                        BroadcastBool, Other,   _,  7,  0, ""},
    {"PRelu",                     Broadcast,     Other,   W,  7,  0, ""},
    {"Pad",                       Own,           Other,   _, 11,  0, ""},
    {"Pow",                       Broadcast,     Through, _,  7,  0, "prune: scalar exponent only"},
    {"QLinearConv",               None,          Other,   W,  0,  0, ""},
    {"QLinearMatMul",             None,          Other,   W,  0,  0, ""},
    {"QuantizeLinear",            None,          Other,   _, 10,  0, ""},
    {"RMSNormalization",          Same,          Other,   W,  0,  0, ""},
    {"RNN",                       None,          Other,   W,  0,  0, ""},
    {"RandomNormal",              None,          Other,   _,  0,  0, ""},
    {"RandomNormalLike",          None,          Other,   _,  0,  0, "element type from `dtype`"},
    {"RandomUniform",             None,          Other,   _,  0,  0, ""},
    {"RandomUniformLike",         None,          Other,   _,  0,  0, "element type from `dtype`"},
    {"Range",                     None,          Other,   _,  0,  0, "data-dependent"},
    {"Reciprocal",                Same,          Through, _,  6,  0, ""},
    {"ReduceL1",                  Reduce,        Other,   _,  1, 18, ""},
    {"ReduceL2",                  Reduce,        Other,   _,  1, 18, ""},
    {"ReduceLogSum",              Reduce,        Other,   _,  1, 18, ""},
    {"ReduceLogSumExp",           Reduce,        Other,   _,  1, 18, ""},
    {"ReduceMax",                 Reduce,        Other,   _,  1, 18, ""},
    {"ReduceMean",                Reduce,        Other,   _,  1, 18, ""},
    {"ReduceMin",                 Reduce,        Other,   _,  1, 18, ""},
    {"ReduceProd",                Reduce,        Other,   _,  1, 18, ""},
    {"ReduceSum",                 Reduce,        Other,   _, 13,  0, ""},
    {"ReduceSumSquare",           Reduce,        Other,   _,  1, 18, ""},
    {"RegexFullMatch",            None,          Other,   _,  0,  0, ""},
    {"Relu",                      Same,          Through, _,  6,  0, ""},
    {"Reshape",                   Own,           Other,   _,  5,  0, ""},
    {"Resize",                    Own,           Other,   _, 11,  0, ""},
    {"ReverseSequence",           Same,          Other,   _,  0,  0, ""},
    {"RoiAlign",                  None,          Other,   _,  0,  0, ""},
    {"RotaryEmbedding",           None,          Other,   _,  0,  0, ""},
    {"Round",                     Same,          Through, _,  0,  0, ""},
    {"STFT",                      None,          Other,   _,  0,  0, ""},
    {"Scan",                      None,          Other,   _,  0,  0, ""},
    {"Scatter",                   Same,          Other,   _,  0,  0, "deprecated ScatterElements"},
    {"ScatterElements",           Same,          Other,   _, 11,  0, ""},
    {"ScatterND",                 Same,          Other,   _,  0,  0, ""},
    {"Selu",                      Same,          Through, _,  6,  0, ""},
    {"SequenceAt",                None,          Other,   _,  0,  0, "sequence or optional values"},
    {"SequenceConstruct",         None,          Other,   _,  0,  0, "sequence or optional values"},
    {"SequenceEmpty",             None,          Other,   _,  0,  0, "sequence or optional values"},
    {"SequenceErase",             None,          Other,   _,  0,  0, "sequence or optional values"},
    {"SequenceInsert",            None,          Other,   _,  0,  0, "sequence or optional values"},
    {"SequenceLength",            None,          Other,   _,  0,  0, "sequence or optional values"},
    {"SequenceMap",               None,          Other,   _,  0,  0, "sequence or optional values"},
    {"Shape",                     Own,           Other,   _,  1,  0, ""},
    {"Shrink",                    Same,          Through, _,  0,  0, ""},
    {"Sigmoid",                   Same,          Through, _,  6,  0, ""},
    {"Sign",                      Same,          Through, _,  9,  0, ""},
    {"Sin",                       Same,          Through, _,  0,  0, ""},
    {"Sinh",                      Same,          Through, _,  0,  0, ""},
    {"Size",                      Own,           Other,   _,  1,  0, ""},
    {"Slice",                     Own,           Other,   _, 10,  0, ""},
    {"Softmax",                   Same,          Other,   _, 13,  0, ""},
    {"SoftmaxCrossEntropyLoss",   None,          Other,   _,  0,  0, ""},
    {"Softplus",                  Same,          Through, _,  1,  0, ""},
    {"Softsign",                  Same,          Through, _,  1,  0, ""},
    {"SpaceToDepth",              None,          Other,   _,  1,  0, ""},
    {"Split",                     Own,           Other,   _, 13, 18, ""},
    {"SplitToSequence",           None,          Other,   _,  0,  0, "sequence or optional values"},
    {"Sqrt",                      Same,          Through, _,  6,  0, ""},
    {"Squeeze",                   Own,           Other,   _, 13,  0, ""},
    {"StringConcat",              None,          Other,   _,  0,  0, ""},
    {"StringNormalizer",          None,          Other,   _,  0,  0, ""},
    {"StringSplit",               None,          Other,   _,  0,  0, ""},
    {"Sub",                       Broadcast,     Other,   _,  7,  0, ""},
    {"Sum",                       Broadcast,     Other,   _,  8,  0, ""},
    {"Swish",                     Same,          Through, _,  0,  0, ""},
    {"Tan",                       Same,          Through, _,  0,  0, ""},
    {"Tanh",                      Same,          Through, _,  6,  0, ""},
    {"TensorScatter",             Same,          Other,   _,  0,  0, "the updated cache"},
    {"TfIdfVectorizer",           None,          Other,   _,  0,  0, ""},
    {"ThresholdedRelu",           Same,          Through, _,  0,  0, ""},
    {"Tile",                      Own,           Other,   _,  6,  0, ""},
    {"TopK",                      None,          Other,   _, 10,  0, ""},
    {"Transpose",                 Own,           Other,   _,  1,  0, ""},
    {"Trilu",                     Same,          Other,   _,  0,  0, ""},
    {"Unique",                    None,          Other,   _,  0,  0, "data-dependent"},
    {"Unsqueeze",                 Own,           Other,   _, 13,  0, ""},
    {"Upsample",                  Own,           Other,   _,  0,  0, ""},
    {"Where",                     Own,           Other,   _,  9,  0, "broadcast; type of X"},
    {"Xor",                       BroadcastBool, Other,   _,  7,  0, ""},
};

constexpr std::string_view kLegacyBroadcast = "the legacy broadcast/axis attributes are dropped (numpy broadcasting)";
constexpr std::string_view kAxesInput = "the axes attribute becomes a constant input";
constexpr std::string_view kOneAxis =
    "the op runs along one axis instead of the 2-D coercion at axis: rewritten where the coerced axes hold one "
    "non-unit dim";

constexpr RaiseRewrite kRaiseRewrites[] = {
    // op                  at oldest becomes            what
    {"Add",                 7, 1, "",                kLegacyBroadcast},
    {"And",                 7, 1, "",                kLegacyBroadcast},
    {"BatchNormalization",  7, 1, "",                "is_test and consumed_inputs are dropped (inference only)"},
    {"BatchNormalization",  9, 7, "",                "spatial is dropped (per-channel statistics only)"},
    {"Clip",               11, 1, "",                "the min/max attributes become constant inputs"},
    {"Div",                 7, 1, "",                kLegacyBroadcast},
    {"Dropout",             7, 1, "",                "is_test and consumed_inputs are dropped (inference only)"},
    {"Dropout",            10, 7, "",                "the mask output becomes bool (only where nothing reads it)"},
    {"Dropout",            12, 10, "",               "the ratio attribute becomes a constant input"},
    {"Equal",               7, 1, "",                kLegacyBroadcast},
    {"Gemm",                7, 1, "",                "the broadcast attribute is dropped (C broadcasts)"},
    {"Greater",             7, 1, "",                kLegacyBroadcast},
    {"Hardmax",            13, 1, "",                kOneAxis},
    {"Less",                7, 1, "",                kLegacyBroadcast},
    {"LogSoftmax",         13, 1, "",                kOneAxis},
    {"Mul",                 7, 1, "",                kLegacyBroadcast},
    {"Or",                  7, 1, "",                kLegacyBroadcast},
    {"Pad",                 2, 1, "",                "the paddings attribute is renamed pads"},
    {"Pad",                11, 2, "",                "the pads and value attributes become constant inputs"},
    {"Pow",                 7, 1, "",                kLegacyBroadcast},
    {"ReduceL1",           18, 1, "",                kAxesInput},
    {"ReduceL2",           18, 1, "",                kAxesInput},
    {"ReduceLogSum",       18, 1, "",                kAxesInput},
    {"ReduceLogSumExp",    18, 1, "",                kAxesInput},
    {"ReduceMax",          18, 1, "",                kAxesInput},
    {"ReduceMean",         18, 1, "",                kAxesInput},
    {"ReduceMin",          18, 1, "",                kAxesInput},
    {"ReduceProd",         18, 1, "",                kAxesInput},
    {"ReduceSum",          13, 1, "",                kAxesInput},
    {"ReduceSumSquare",    18, 1, "",                kAxesInput},
    {"Resize",             11, 10, "",               "Resize-10's asymmetric coordinates and floor/ceil nearest rounding "
                                                     "are written out; an roi input is added"},
    {"Scatter",            11, 9, "ScatterElements", "Scatter is deprecated: the node becomes ScatterElements"},
    {"Slice",              10, 1, "",                "the starts/ends/axes attributes become constant inputs"},
    {"Softmax",            13, 1, "",                kOneAxis},
    {"Split",              13, 2, "",                "the split attribute becomes a constant input"},
    {"Split",              18, 13, "",               "num_outputs is set where no split input is given"},
    {"Squeeze",            13, 1, "",                kAxesInput},
    {"Sub",                 7, 1, "",                kLegacyBroadcast},
    {"TopK",               10, 1, "",                "the k attribute becomes the K input"},
    {"Unsqueeze",          13, 1, "",                kAxesInput},
    {"Upsample",            9, 7, "",                "the scales attribute becomes an input"},
    {"Upsample",           10, 9, "Resize",          "Upsample is deprecated: the node becomes Resize-10"},
    {"Xor",                 7, 1, "",                kLegacyBroadcast},
};

constexpr bool by_op_then_at(const RaiseRewrite& a, const RaiseRewrite& b) {
  return a.op < b.op || (a.op == b.op && a.at < b.at);
}
static_assert(std::is_sorted(std::begin(kRaiseRewrites), std::end(kRaiseRewrites), by_op_then_at),
              "kRaiseRewrites must be sorted by op, then at");

constexpr bool by_name(const OpFacts& a, const OpFacts& b) { return a.op < b.op; }
static_assert(std::is_sorted(std::begin(kTable), std::end(kTable), by_name), "kTable must be sorted by op");
static_assert(std::adjacent_find(std::begin(kTable), std::end(kTable),
                                 [](const OpFacts& a, const OpFacts& b) { return a.op == b.op; }) ==
                  std::end(kTable),
              "kTable must list each op once");

}  // namespace

const OpFacts* op_facts(std::string_view op) {
  const auto it = std::lower_bound(std::begin(kTable), std::end(kTable), op,
                                   [](const OpFacts& f, std::string_view o) { return f.op < o; });
  return it != std::end(kTable) && it->op == op ? &*it : nullptr;
}

std::span<const OpFacts> all_op_facts() { return kTable; }

ShapeKind shape_kind(std::string_view op) {
  const OpFacts* f = op_facts(op);
  return f ? f->shape : ShapeKind::None;
}

bool passes_channels_through(std::string_view op) {
  const OpFacts* f = op_facts(op);
  return f && f->channels == Channels::Through;
}

bool draws_random_values(std::string_view op) {
  static constexpr std::string_view kRandom[] = {"Bernoulli", "Dropout", "Multinomial", "RandomNormal",
                                                 "RandomNormalLike", "RandomUniform", "RandomUniformLike"};
  return std::find(std::begin(kRandom), std::end(kRandom), op) != std::end(kRandom);
}

std::span<const RaiseRewrite> all_raise_rewrites() { return kRaiseRewrites; }

std::span<const RaiseRewrite> raise_rewrites(std::string_view op) {
  const auto [lo, hi] = std::equal_range(std::begin(kRaiseRewrites), std::end(kRaiseRewrites), RaiseRewrite{op, 0, 0, "", ""},
                                         [](const RaiseRewrite& a, const RaiseRewrite& b) { return a.op < b.op; });
  return {lo, hi};
}

std::optional<int> raise_compatible_from(std::string_view op) {
  const OpFacts* f = op_facts(op);
  if (!f) return std::nullopt;
  int from = f->raise_from;
  // Newest rewrite first: one whose result is raisable extends the range down to its oldest version.
  const auto rewrites = raise_rewrites(op);
  for (auto it = rewrites.rbegin(); it != rewrites.rend(); ++it) {
    if (it->at > 13) continue;
    const auto after = it->becomes.empty() ? (from > 0 ? std::optional<int>(from) : std::nullopt)
                                           : raise_compatible_from(it->becomes);
    if (after && *after <= it->at) from = from > 0 ? std::min(from, it->oldest) : it->oldest;
  }
  if (from == 0) return std::nullopt;
  return from;
}

std::optional<int> changed_meaning_after_13(std::string_view op) {
  const OpFacts* f = op_facts(op);
  if (!f || f->changed_at == 0) return std::nullopt;
  return f->changed_at;
}

}  // namespace mcc::ir
