// Finding the image stem of a vision model (see quantize/image_stem.h).
#include "transforms/quantize/image_stem.h"

#include <string_view>

#include "ir/op_attrs.h"
#include "ir/op_facts.h"

namespace mcc::transforms::quantize {

namespace {

/// An op that follows a convolution as its activation or a folded affine step: a value-wise op by
/// the shared op table (output shape of input 0, each channel from its own: Relu, Clip, HardSwish,
/// Sigmoid, Gelu, ...), or one combining the stem's values with constants or with each other (SiLU's
/// Mul, a scalar scale and shift, PRelu's slopes, an unfolded BatchNormalization).
bool is_activation_step(const ir::Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  if (ir::shape_kind(n.op_type) == ir::ShapeKind::Same && ir::passes_channels_through(n.op_type)) return true;
  static const std::set<std::string_view> combining{"Add", "BatchNormalization", "Mul", "PRelu"};
  return combining.count(n.op_type) > 0;
}

bool is_stem_conv(const ir::Node& n) {
  if (!n.is("Conv") || n.inputs.size() < 2) return false;
  const ir::Value* x = n.inputs[0];
  const ir::Value* w = n.inputs[1];
  if (!x || !x->is_graph_input || x->initializer || !w || !w->initializer) return false;
  const std::vector<int64_t>& dims = w->initializer->dims();
  return dims.size() >= 3 && ir::ConvAttrs(n).group() == 1 && dims[1] == kImageStemChannels;
}

}  // namespace

ImageStem find_image_stem(const ir::Graph& g, const std::function<bool(const ir::Node&)>& ruled) {
  ImageStem stem;
  for (const ir::Node* n : g.nodes()) {  // topological order: a step comes after what it reads
    bool in_stem = is_stem_conv(*n) && !ruled(*n);
    if (!in_stem && is_activation_step(*n)) {
      bool reads_stem = false, reads_other = false;
      for (const ir::Value* in : n->inputs) {
        if (!in || in->initializer) continue;
        (stem.values.count(in) ? reads_stem : reads_other) = true;
      }
      in_stem = reads_stem && !reads_other;
    }
    if (!in_stem) continue;
    stem.nodes.insert(n);
    for (const ir::Value* out : n->outputs)
      if (out) stem.values.insert(out);
  }
  return stem;
}

}  // namespace mcc::transforms::quantize
