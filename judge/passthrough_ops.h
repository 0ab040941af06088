// Ops that change how a value is stored, not what it says: QuantizeLinear, DequantizeLinear (ONNX
// and com.microsoft) and Cast. The per-layer comparison and the probability-output test look
// through them to the op that computed a value.
#pragma once
#include "ir/graph.h"

namespace mcc::judge {

inline bool is_passthrough(const ir::Node& n) {
  return n.is("DequantizeLinear") || n.is("QuantizeLinear") || n.is("Cast") || n.is("DequantizeLinear", "com.microsoft") ||
         n.is("QuantizeLinear", "com.microsoft");
}

}  // namespace mcc::judge
