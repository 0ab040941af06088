// Element types of every value before running, also where shapes are dynamic: declared types,
// else ir::ShapeInference, else the schema rule (schema_output_dtype), else, for If/Loop/Scan
// outputs, the type of the body output they come from. Backend placement asks it
// which input types a node will see; the fp16 stage types unknown outputs with the same rule.
//
// Does not apply to: outputs of ops libonnx has no schema for (other domains, ops newer than
// opset 17) that are neither declared nor inferred; they stay Undefined.
#pragma once
#include <functional>
#include <unordered_map>

#include "ir/graph.h"
#include "ir/op_schema.h"
#include "ir/shape_inference/shape_inference.h"

namespace mcc::ir {

/// Element type of output k of n from its attributes (Cast `to`, Constant and ConstantOfShape
/// values) or its schema `t` (an input that shares the output's type parameter, or a literal
/// tensor(float)/tensor(int64)/tensor(bool) output), given the types of the inputs; Undefined
/// when neither says.
DType schema_output_dtype(const Node& n, size_t k, const OpTypeInfo* t, const std::function<DType(const Value*)>& input_dtype);

/// The schema facts of n at `opset` when its inputs and outputs fit the schema, else nullptr.
const OpTypeInfo* fitting_schema(const Node& n, int64_t opset);

class ElementTypes {
 public:
  /// Types the main graph and every subgraph (outer values visible).
  explicit ElementTypes(const Model& m);
  DType of(const Value* v) const;

 private:
  void run_graph(const Model& m, const Graph& g, const ShapeInference& shapes);
  std::unordered_map<const Value*, DType> table_;
};

}  // namespace mcc::ir
