// Attributes: typed (ONNX AttributeType numbering), kept in stored order for determinism, with
// passthrough of the kinds mcc does not model (TypeProto, SparseTensor) as serialized bytes.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/tensor.h"

namespace mcc::ir {

class Graph;

/// Serialized bytes of a protobuf message mcc carries through without modelling it.
struct OpaqueProto {
  std::string bytes;
  bool operator==(const OpaqueProto&) const = default;
};

/// ONNX AttributeProto.AttributeType numbering.
enum class AttrKind : int32_t {
  Undefined = 0, Float = 1, Int = 2, String = 3, Tensor = 4, Graph = 5, SparseTensor = 11,
  TypeProto = 13, Floats = 6, Ints = 7, Strings = 8, Tensors = 9, Graphs = 10,
  SparseTensors = 12, TypeProtos = 14,
};

using AttrValue = std::variant<std::monostate, float, int64_t, std::string, Tensor,
                               std::shared_ptr<Graph>, std::vector<float>, std::vector<int64_t>,
                               std::vector<std::string>, std::vector<Tensor>,
                               std::vector<std::shared_ptr<Graph>>, OpaqueProto,
                               std::vector<OpaqueProto>>;

struct Attribute {
  std::string name;
  AttrKind kind = AttrKind::Undefined;
  AttrValue value;
  std::string ref_attr_name;     // function-body attribute reference, carried through
  std::string doc_string;
  std::string proto_passthrough; // serialized AttributeProto fields mcc does not model
};

}  // namespace mcc::ir
