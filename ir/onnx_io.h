// ONNX file import/export. Only ir/onnx_import.cpp and ir/onnx_export.cpp touch protobuf.
#pragma once
#include <string>

#include "ir/graph.h"

namespace mcc::ir {

/// Loads an ONNX model. Accepts tensors in raw_data and typed fields, external data (relative to
/// the model's folder), graphs that are not topologically sorted (sorted on import), IR up to 10.
/// Throws ModelError (malformed/truncated file, missing external data) or UnsupportedError.
Model load_model(const std::string& path);
/// Same, from bytes already in memory; external data resolves against base_dir.
Model load_model_from_bytes(std::string bytes, const std::string& base_dir);

struct SaveOptions {
  /// Tensors that were external in the input stay external; main-graph initializers of at least
  /// 1 KiB also go external when the model would exceed 2 GB inline, or always when this is set.
  bool force_external = false;
  std::string external_file;  // default: "<output file name>.data"
};

/// Writes the model atomically (temp file + rename) with deterministic bytes. Tensors that were
/// external in the input stay external, written next to the output. Never modifies the input.
void save_model(const Model& m, const std::string& path, const SaveOptions& opts = {});
/// Serializes a model that holds no external data to bytes (tests, hashing).
std::string serialize_model(const Model& m);

/// Reads a TensorProto file (ONNX test data input_K.pb / output_K.pb).
Tensor load_tensor_pb(const std::string& path);
/// Writes a TensorProto file.
void save_tensor_pb(const Tensor& t, const std::string& path);

}  // namespace mcc::ir
