// The element types of the cuda backend's elementwise, normalization, reduction and pooling
// kernels, as plain C++ for their launcher signatures (host code maps ir::DType onto it).
#pragma once
#include <cstdint>

namespace mcc::cuda {

enum class ElemType : uint8_t { F32, F16, I32, I64, Bool, U8, I8 };

inline int elem_bytes(ElemType t) {
  switch (t) {
    case ElemType::F32: case ElemType::I32: return 4;
    case ElemType::I64: return 8;
    case ElemType::F16: return 2;
    default: return 1;
  }
}

}  // namespace mcc::cuda
