// Typed views of the attributes of Conv-family ops, Gemm and BatchNormalization, so that each
// ONNX default is written once. A view holds a reference to the node and reads an attribute only
// when asked (each accessor is one Node::attr_* call), so it reads nothing a caller does not use
// and an attribute of the wrong kind raises the same ModelError, at the same point, as a direct
// read. Nothing is validated here: range checks and their messages stay with the callers.
// Does not apply to: other ops' attributes; the view must not outlive its node.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace mcc::ir {

/// Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv. The window attributes (auto_pad,
/// kernel_shape, strides, dilations, pads) mean the same for the pooling ops and may be read
/// through this view for them too.
class ConvAttrs {
 public:
  explicit ConvAttrs(const Node& n) : n_(&n) {}
  int64_t group() const { return n_->attr_int("group", 1); }
  /// DeformConv only.
  int64_t offset_group() const { return n_->attr_int("offset_group", 1); }
  /// As written ("NOTSET" when absent; an empty string stays empty).
  std::string auto_pad() const { return n_->attr_string("auto_pad", "NOTSET"); }
  /// The attributes as written, {} when absent: kernel_shape then comes from W, strides and
  /// dilations are 1, pads and output_padding 0, output_shape is computed.
  std::vector<int64_t> kernel_shape() const { return n_->attr_ints("kernel_shape"); }
  std::vector<int64_t> strides() const { return n_->attr_ints("strides"); }
  std::vector<int64_t> dilations() const { return n_->attr_ints("dilations"); }
  std::vector<int64_t> pads() const { return n_->attr_ints("pads"); }
  std::vector<int64_t> output_padding() const { return n_->attr_ints("output_padding"); }
  std::vector<int64_t> output_shape() const { return n_->attr_ints("output_shape"); }
  /// For `spatial` spatial dims: the attribute as written when present (even when its length is
  /// wrong or it is empty: callers check), else the ONNX default of that length.
  std::vector<int64_t> strides(size_t spatial) const;         // 1 each
  std::vector<int64_t> dilations(size_t spatial) const;       // 1 each
  std::vector<int64_t> pads(size_t spatial) const;            // 2 * spatial zeros
  std::vector<int64_t> output_padding(size_t spatial) const;  // 0 each

 private:
  const Node* n_;
};

/// Gemm: Y = alpha * A' * B' + beta * C.
class GemmAttrs {
 public:
  explicit GemmAttrs(const Node& n) : n_(&n) {}
  bool trans_a() const { return n_->attr_int("transA", 0) != 0; }
  bool trans_b() const { return n_->attr_int("transB", 0) != 0; }
  float alpha() const { return n_->attr_float("alpha", 1.0f); }
  float beta() const { return n_->attr_float("beta", 1.0f); }

 private:
  const Node* n_;
};

/// BatchNormalization (all opsets).
class BatchNormAttrs {
 public:
  explicit BatchNormAttrs(const Node& n) : n_(&n) {}
  float epsilon() const { return n_->attr_float("epsilon", 1e-5f); }
  float momentum() const { return n_->attr_float("momentum", 0.9f); }
  /// The attribute as written (opset 14+ gives it meaning; callers decide about older nodes).
  bool training_mode() const { return n_->attr_int("training_mode", 0) != 0; }
  /// Opsets < 7: is_test as written (0 when absent = training).
  bool is_test() const { return n_->attr_int("is_test", 0) != 0; }
  /// spatial=0 before opset 9: mean/var per activation rather than per channel. The attribute is
  /// read only for such old nodes.
  bool per_activation() const { return n_->since_version < 9 && n_->attr_int("spatial", 1) == 0; }

 private:
  const Node* n_;
};

}  // namespace mcc::ir
