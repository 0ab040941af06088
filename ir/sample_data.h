// Sample folders for eval/calibration/golden data, in both layouts SPEC §2 accepts:
//   ONNX test data:  DIR/test_data_set_N/input_K.pb, output_K.pb   (K = position)
//   NumPy:           DIR/<sample>/<tensor name>.npy  or  input_K.npy / output_K.npy
// and a single sample folder holding the tensors directly. Samples are listed without loading
// their tensors, so callers can stream them one at a time. Test-data .pb files may also hold
// sequences and optionals (read as the graph declares them); maps are refused as unsupported.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/onnx_io.h"

namespace mcc::ir {

struct SampleFile {
  std::string name;    // graph value name ("" when positional)
  int position = -1;   // K of input_K / output_K (-1 when named)
  std::string path;    // the .pb / .npy file, read by bind_sample as the type the graph declares
};

struct Sample {
  std::string name;    // folder name ("test_data_set_0", "img_0001", ...)
  std::string dir;
  std::vector<SampleFile> inputs, outputs;
};

/// A sample matched to a graph: feeds by input name, expected values per graph output.
struct BoundSample {
  std::string name;
  std::vector<std::pair<std::string, Tensor>> feeds;           // tensor inputs (and present optional tensors)
  std::vector<std::pair<std::string, TestValue>> value_feeds;  // sequence / empty optional inputs
  std::vector<std::optional<TestValue>> expected;              // one slot per graph output
  std::vector<std::string> defaulted;  // inputs the sample left out, fed as an empty-cache prefill (decoder_feeds.h)
};

/// Sample folders under dir (or {dir} itself when it holds tensors directly), in natural
/// order (test_data_set_2 before test_data_set_10). Throws ModelError when dir is missing or
/// holds no sample.
std::vector<std::string> list_sample_dirs(const std::string& dir);
/// Lists one sample folder's .pb and .npy files (output_* files only when with_outputs); the
/// files are read by bind_sample, which knows the types the graph declares.
Sample load_sample(const std::string& sample_dir, bool with_outputs);
/// Matches a sample to the graph and reads its files: positional input_K is the K-th graph input
/// that is not an initializer; a named file is an input when it names a graph input, an expected
/// output when it names a graph output. A .pb file is read as the graph declares the value
/// (TensorProto, SequenceProto of tensors, OptionalProto), and a UINT16 tensor where the graph
/// declares BFLOAT16 is read as bfloat16 bits (older ONNX test data stores bf16 that way).
/// Sequence and empty optional inputs go to value_feeds when non_tensor_inputs is set, else throw
/// UnsupportedError naming the file. Throws ModelError naming the file for files that match
/// nothing or do not hold the declared kind; a declared map throws UnsupportedError.
/// A KV-cache decoder's cache, attention_mask and position_ids inputs that the sample leaves out
/// are fed as an empty-cache prefill (fill_decoder_cache_inputs) and listed in `defaulted`.
BoundSample bind_sample(const Graph& g, const Sample& s, bool non_tensor_inputs = false);

}  // namespace mcc::ir
