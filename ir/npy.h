// NumPy .npy files (format 1.0-3.0, little-endian, C order) to and from Tensors.
#pragma once
#include <string>

#include "ir/tensor.h"

namespace mcc::ir {
/// Reads a .npy file. Throws ModelError on a malformed/truncated file, UnsupportedError on a
/// dtype mcc has no DType for, Fortran order or big-endian data.
Tensor load_npy(const std::string& path);
/// Writes a .npy file (format 1.0) atomically.
void save_npy(const Tensor& t, const std::string& path);
}  // namespace mcc::ir
