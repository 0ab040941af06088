// Spatial-rank-aware defaults of the Conv-family window attributes (see op_attrs.h).
#include "ir/op_attrs.h"

namespace mcc::ir {

std::vector<int64_t> ConvAttrs::strides(size_t spatial) const {
  return n_->attr_ints("strides", std::vector<int64_t>(spatial, 1));
}

std::vector<int64_t> ConvAttrs::dilations(size_t spatial) const {
  return n_->attr_ints("dilations", std::vector<int64_t>(spatial, 1));
}

std::vector<int64_t> ConvAttrs::pads(size_t spatial) const {
  return n_->attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
}

std::vector<int64_t> ConvAttrs::output_padding(size_t spatial) const {
  return n_->attr_ints("output_padding", std::vector<int64_t>(spatial, 0));
}

}  // namespace mcc::ir
