// Dim and Shape: a dim is a value, a symbol (dim_param) or unknown; a shape tells "rank unknown"
// (dims == nullopt) from "scalar" (dims == {}).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mcc::ir {

struct Dim {
  std::optional<int64_t> value;  // set for a static dim
  std::string param;             // dim_param symbol ("N"), empty if none
  std::string denotation;        // ONNX dimension denotation, carried through
  static Dim of(int64_t v) { Dim d; d.value = v; return d; }
  static Dim symbol(std::string s) { Dim d; d.param = std::move(s); return d; }
  bool operator==(const Dim&) const = default;
};

struct Shape {
  std::optional<std::vector<Dim>> dims;  // nullopt = rank unknown; empty = scalar
  static Shape unknown() { return {}; }
  static Shape of(const std::vector<int64_t>& v) {
    Shape s; s.dims.emplace();
    for (int64_t x : v) s.dims->push_back(Dim::of(x));
    return s;
  }
  bool rank_known() const { return dims.has_value(); }
  size_t rank() const { return dims ? dims->size() : 0; }
  /// All dims known: returns them; otherwise nullopt.
  std::optional<std::vector<int64_t>> static_dims() const {
    if (!dims) return std::nullopt;
    std::vector<int64_t> out;
    for (const auto& d : *dims) { if (!d.value) return std::nullopt; out.push_back(*d.value); }
    return out;
  }
  bool operator==(const Shape&) const = default;
};

}  // namespace mcc::ir
