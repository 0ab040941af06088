// Sample folder discovery and loading (.pb TensorProto / SequenceProto / OptionalProto and .npy files).
#include "ir/sample_data.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "ir/decoder_feeds.h"
#include "ir/npy.h"
#include "ir/onnx_io.h"

namespace fs = std::filesystem;

namespace mcc::ir {
namespace {

bool is_tensor_file(const fs::path& p) {
  const auto ext = p.extension().string();
  return ext == ".pb" || ext == ".npy";
}

bool holds_tensors(const fs::path& d) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(d, ec))
    if (e.is_regular_file() && is_tensor_file(e.path())) return true;
  return false;
}

// Natural order: compares digit runs by value.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      const std::string na = a.substr(i, i2 - i), nb = b.substr(j, j2 - j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = i2; j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i; ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

// "input_3" -> 3; "x" -> -1.
int position_of(const std::string& stem, const std::string& prefix) {
  if (stem.rfind(prefix, 0) != 0) return -1;
  const std::string rest = stem.substr(prefix.size());
  if (rest.empty() || !std::all_of(rest.begin(), rest.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return -1;
  return std::stoi(rest);
}

}  // namespace

std::vector<std::string> list_sample_dirs(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw ModelError("data folder '" + dir + "' does not exist or is not a folder");
  if (holds_tensors(dir)) return {dir};
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory() && holds_tensors(e.path())) out.push_back(e.path().string());
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return natural_less(fs::path(a).filename().string(), fs::path(b).filename().string());
  });
  if (out.empty()) throw ModelError("data folder '" + dir + "' holds no samples (.pb or .npy files)");
  return out;
}

Sample load_sample(const std::string& sample_dir, bool with_outputs) {
  Sample s;
  s.dir = sample_dir;
  s.name = fs::path(sample_dir).filename().string();
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(sample_dir, ec))
    if (e.is_regular_file() && is_tensor_file(e.path())) files.push_back(e.path());
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return natural_less(a.filename().string(), b.filename().string());
  });
  for (const auto& f : files) {
    const std::string stem = f.stem().string();
    const bool is_out = stem.rfind("output_", 0) == 0 || stem.rfind("expected_", 0) == 0;
    if (is_out && !with_outputs) continue;
    SampleFile sf;
    sf.path = f.string();
    sf.position = position_of(stem, is_out ? (stem.rfind("output_", 0) == 0 ? "output_" : "expected_") : "input_");
    if (sf.position < 0) sf.name = is_out ? stem.substr(stem.find('_') + 1) : stem;
    (is_out ? s.outputs : s.inputs).push_back(std::move(sf));
  }
  return s;
}

namespace {

// Reads one sample file as the type the graph declares for `declared`.
TestValue read_as_declared(const std::string& path, const Value& declared) {
  TestValue v;
  if (fs::path(path).extension() == ".npy") {
    if (!declares_tensor(declared))
      throw ModelError(path + ": a .npy file holds a tensor, but the model declares a sequence or optional for '" +
                       declared.name + "'; give it as a .pb file (SequenceProto / OptionalProto)");
    v.tensor = load_npy(path);
  } else {
    v = load_value_pb(path, declared);
  }
  // onnx's test generator stores bfloat16 data as uint16 arrays: read those bits as bf16.
  if (v.kind == TestValue::Kind::Tensor && declared.dtype == DType::BF16 && v.tensor.dtype() == DType::U16)
    v.tensor = Tensor::from_buffer(DType::BF16, v.tensor.dims(), v.tensor.buffer());
  return v;
}

}  // namespace

BoundSample bind_sample(const Graph& g, const Sample& s, bool non_tensor_inputs) {
  BoundSample b;
  b.name = s.name;
  b.expected.resize(g.outputs.size());
  std::vector<const Value*> data_inputs;
  for (const Value* v : g.inputs)
    if (!v->initializer) data_inputs.push_back(v);
  auto feed = [&](const SampleFile& f, const Value& in) {
    TestValue v = read_as_declared(f.path, in);
    if (v.kind == TestValue::Kind::Tensor) { b.feeds.emplace_back(in.name, std::move(v.tensor)); return; }
    if (!non_tensor_inputs)
      throw UnsupportedError(f.path + ": input '" + in.name + "' is a sequence or an empty optional; only tensor inputs are supported here");
    b.value_feeds.emplace_back(in.name, std::move(v));
  };
  auto output_index = [&](const std::string& name) {
    auto out = std::find_if(g.outputs.begin(), g.outputs.end(), [&](const Value* v) { return v->name == name; });
    return out == g.outputs.end() ? g.outputs.size() : static_cast<size_t>(out - g.outputs.begin());
  };
  for (const auto& f : s.inputs) {
    // A graph input literally named input_K (Keras exports: input_1) takes its file by name.
    const std::string stem = fs::path(f.path).stem().string();
    auto named = std::find_if(g.inputs.begin(), g.inputs.end(), [&](const Value* v) { return v->name == stem; });
    if (f.position >= 0 && named != g.inputs.end()) { feed(f, **named); continue; }
    if (f.position >= 0) {
      if (static_cast<size_t>(f.position) >= data_inputs.size())
        throw ModelError(f.path + ": the model has only " + std::to_string(data_inputs.size()) + " data inputs");
      feed(f, *data_inputs[static_cast<size_t>(f.position)]);
      continue;
    }
    auto in = std::find_if(g.inputs.begin(), g.inputs.end(), [&](const Value* v) { return v->name == f.name; });
    if (in != g.inputs.end()) { feed(f, **in); continue; }
    if (const size_t k = output_index(f.name); k < g.outputs.size()) {
      b.expected[k] = read_as_declared(f.path, *g.outputs[k]);
      continue;
    }
    throw ModelError(f.path + ": '" + f.name + "' is neither a graph input nor a graph output");
  }
  for (const auto& f : s.outputs) {
    const size_t k = f.position >= 0 ? static_cast<size_t>(f.position) : output_index(f.name);
    if (f.position < 0 && k >= g.outputs.size()) throw ModelError(f.path + ": '" + f.name + "' is not a graph output");
    if (k >= g.outputs.size())
      throw ModelError(f.path + ": the model has only " + std::to_string(g.outputs.size()) + " outputs");
    b.expected[k] = read_as_declared(f.path, *g.outputs[k]);
  }
  b.defaulted = fill_decoder_cache_inputs(g, b);
  return b;
}

}  // namespace mcc::ir
