// A "genuinely damaged" copy of a real model for accuracy-verdict tests: the weight initializer
// of one named Conv node, scaled by a factor (1.01: a 1 % change no correct runtime would make).
// The Conv may sit in a subgraph (If/Loop bodies) with its weight in any enclosing graph, as in
// Silero VAD. Works on the ONNX protobuf directly, so the rest of the file stays as it was.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mcc::test {
namespace detail {

// The node named `name` in `g` or its subgraphs; `scopes` ends with the graphs that enclose it.
inline const onnx::NodeProto* find_node(onnx::GraphProto& g, const std::string& name,
                                        std::vector<onnx::GraphProto*>& scopes) {
  scopes.push_back(&g);
  for (auto& n : *g.mutable_node()) {
    if (n.name() == name) return &n;
    for (auto& a : *n.mutable_attribute()) {
      std::vector<onnx::GraphProto*> subs;
      if (a.has_g()) subs.push_back(a.mutable_g());
      for (auto& sg : *a.mutable_graphs()) subs.push_back(&sg);
      for (auto* sg : subs)
        if (const auto* found = find_node(*sg, name, scopes)) return found;
    }
  }
  scopes.pop_back();
  return nullptr;
}

inline bool scale_float_tensor(onnx::TensorProto& t, float factor) {
  if (t.data_type() != onnx::TensorProto::FLOAT) return false;
  if (t.has_raw_data()) {
    std::string raw = t.raw_data();
    for (size_t i = 0; i + 4 <= raw.size(); i += 4) {
      float v;
      std::memcpy(&v, raw.data() + i, 4);
      v *= factor;
      std::memcpy(raw.data() + i, &v, 4);
    }
    t.set_raw_data(raw);
    return !raw.empty();
  }
  for (auto& v : *t.mutable_float_data()) v *= factor;
  return t.float_data_size() > 0;
}

}  // namespace detail

/// Writes `out`: `in` with the weight (input 1) of the node named `conv` multiplied by `factor`.
/// Returns the weight's name, or "" when the node, its weight initializer, or float data is
/// missing (the caller REQUIREs a name, so a test never passes on an undamaged model).
inline std::string write_with_scaled_conv_weight(const std::filesystem::path& in, const std::filesystem::path& out,
                                                 const std::string& conv, float factor) {
  onnx::ModelProto m;
  {
    std::ifstream f(in, std::ios::binary);
    if (!m.ParseFromIstream(&f)) return "";
  }
  std::vector<onnx::GraphProto*> scopes;
  const onnx::NodeProto* node = detail::find_node(*m.mutable_graph(), conv, scopes);
  if (!node || node->input_size() < 2) return "";
  const std::string weight = node->input(1);
  // The innermost scope holding the initializer is the one the node sees.
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    for (auto& t : *(*it)->mutable_initializer()) {
      if (t.name() != weight) continue;
      if (!detail::scale_float_tensor(t, factor)) return "";
      std::ofstream f(out, std::ios::binary | std::ios::trunc);
      return m.SerializeToOstream(&f) ? weight : "";
    }
  }
  return "";
}

}  // namespace mcc::test
