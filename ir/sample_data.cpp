// Sample folder discovery and loading (.pb TensorProto and .npy files).
#include "ir/sample_data.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

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
    SampleTensor st;
    st.position = position_of(stem, is_out ? (stem.rfind("output_", 0) == 0 ? "output_" : "expected_") : "input_");
    if (st.position < 0) st.name = is_out ? stem.substr(stem.find('_') + 1) : stem;
    st.tensor = f.extension() == ".npy" ? load_npy(f.string()) : load_tensor_pb(f.string());
    (is_out ? s.outputs : s.inputs).push_back(std::move(st));
  }
  return s;
}

BoundSample bind_sample(const Graph& g, Sample s) {
  BoundSample b;
  b.name = s.name;
  b.expected.resize(g.outputs.size());
  std::vector<const Value*> data_inputs;
  for (const Value* v : g.inputs)
    if (!v->initializer) data_inputs.push_back(v);
  auto where = [&](const SampleTensor& t, const char* kind) {
    return s.dir + "/" + (t.position >= 0 ? std::string(kind) + "_" + std::to_string(t.position) : t.name);
  };
  for (auto& t : s.inputs) {
    if (t.position >= 0) {
      if (static_cast<size_t>(t.position) >= data_inputs.size())
        throw ModelError(where(t, "input") + ": the model has only " + std::to_string(data_inputs.size()) + " data inputs");
      b.feeds.emplace_back(data_inputs[static_cast<size_t>(t.position)]->name, std::move(t.tensor));
      continue;
    }
    auto in = std::find_if(g.inputs.begin(), g.inputs.end(), [&](const Value* v) { return v->name == t.name; });
    if (in != g.inputs.end()) { b.feeds.emplace_back(t.name, std::move(t.tensor)); continue; }
    auto out = std::find_if(g.outputs.begin(), g.outputs.end(), [&](const Value* v) { return v->name == t.name; });
    if (out != g.outputs.end()) { b.expected[static_cast<size_t>(out - g.outputs.begin())] = std::move(t.tensor); continue; }
    throw ModelError(where(t, "input") + ".npy: '" + t.name + "' is neither a graph input nor a graph output");
  }
  for (auto& t : s.outputs) {
    size_t k = 0;
    if (t.position >= 0) {
      k = static_cast<size_t>(t.position);
    } else {
      auto out = std::find_if(g.outputs.begin(), g.outputs.end(), [&](const Value* v) { return v->name == t.name; });
      if (out == g.outputs.end()) throw ModelError(where(t, "output") + ": '" + t.name + "' is not a graph output");
      k = static_cast<size_t>(out - g.outputs.begin());
    }
    if (k >= g.outputs.size())
      throw ModelError(where(t, "output") + ": the model has only " + std::to_string(g.outputs.size()) + " outputs");
    b.expected[k] = std::move(t.tensor);
  }
  return b;
}

}  // namespace mcc::ir
