// Sample folders for eval/calibration/golden data, in both layouts SPEC §2 accepts:
//   ONNX test data:  DIR/test_data_set_N/input_K.pb, output_K.pb   (K = position)
//   NumPy:           DIR/<sample>/<tensor name>.npy  or  input_K.npy / output_K.npy
// and a single sample folder holding the tensors directly. Samples are listed without loading
// their tensors, so callers can stream them one at a time.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace mcc::ir {

struct SampleTensor {
  std::string name;    // graph value name ("" when positional)
  int position = -1;   // K of input_K / output_K (-1 when named)
  Tensor tensor;
};

struct Sample {
  std::string name;    // folder name ("test_data_set_0", "img_0001", ...)
  std::string dir;
  std::vector<SampleTensor> inputs, outputs;
};

/// A sample matched to a graph: feeds by input name, expected tensors per graph output.
struct BoundSample {
  std::string name;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::optional<Tensor>> expected;  // one slot per graph output
};

/// Sample folders under dir (or {dir} itself when it holds tensors directly), in natural
/// order (test_data_set_2 before test_data_set_10). Throws ModelError when dir is missing or
/// holds no sample.
std::vector<std::string> list_sample_dirs(const std::string& dir);
/// Loads one sample folder (.pb and .npy files; output_* files only when with_outputs).
Sample load_sample(const std::string& sample_dir, bool with_outputs);
/// Matches a sample to the graph: positional input_K is the K-th graph input that is not an
/// initializer; a named file is an input when it names a graph input, an expected output when
/// it names a graph output. Throws ModelError naming the file for tensors that match nothing.
BoundSample bind_sample(const Graph& g, Sample s);

}  // namespace mcc::ir
