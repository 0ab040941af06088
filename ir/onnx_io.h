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
/// A test-data value that is not a plain tensor: a sequence of tensors, or an optional (empty,
/// or holding a tensor or a sequence).
struct TestValue {
  enum class Kind { Tensor, Sequence, None };
  Kind kind = Kind::Tensor;
  Tensor tensor;
  std::vector<Tensor> seq;
};
/// Reads a test-data .pb file as the type the graph declares for `declared` (TensorProto,
/// SequenceProto of tensors, or OptionalProto of a tensor/sequence), as onnx's own runner does.
/// A file that does not hold the declared kind throws ModelError naming the file and the value;
/// a declared map or sparse tensor throws UnsupportedError naming the file.
TestValue load_value_pb(const std::string& path, const Value& declared);
/// True when the graph declares `v` as a plain tensor (not a sequence, optional, map or sparse).
bool declares_tensor(const Value& v);

/// Writes a TensorProto file.
void save_tensor_pb(const Tensor& t, const std::string& path);

}  // namespace mcc::ir
