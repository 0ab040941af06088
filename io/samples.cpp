// Sample sources: data folders, seeded random inputs, --dim/--shape parsing, samples as feeds.
#include "io/samples.h"

#include <charconv>

namespace mcc::io {
namespace {

int64_t parse_int(const std::string& s, const std::string& flag, const std::string& whole) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    throw UsageError(flag + " '" + whole + "': '" + s + "' is not a non-negative integer");
  return v;
}

// SplitMix64: a tiny, portable generator (std distributions differ between libraries).
struct SplitMix64 {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
};

}  // namespace

void parse_dim_flag(const std::string& s, ShapeOverrides& o) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0) throw UsageError("--dim '" + s + "': expected name=value, e.g. --dim batch=1");
  o.dims[s.substr(0, eq)] = parse_int(s.substr(eq + 1), "--dim", s);
}

void parse_shape_flag(const std::string& s, ShapeOverrides& o) {
  const auto eq = s.rfind('=');
  if (eq == std::string::npos || eq == 0) throw UsageError("--shape '" + s + "': expected input=1x3x224x224");
  std::vector<int64_t> dims;
  const std::string spec = s.substr(eq + 1);
  size_t p = 0;
  while (p <= spec.size() && !spec.empty()) {
    const auto x = spec.find('x', p);
    dims.push_back(parse_int(spec.substr(p, x == std::string::npos ? std::string::npos : x - p), "--shape", s));
    if (x == std::string::npos) break;
    p = x + 1;
  }
  o.shapes[s.substr(0, eq)] = dims;
}

std::vector<int64_t> resolve_input_shape(const ir::Value& input, const ShapeOverrides& o) {
  if (auto it = o.shapes.find(input.name); it != o.shapes.end()) return it->second;
  if (!input.shape.dims)
    throw UsageError("input '" + input.name + "' has no declared shape; set it with --shape " + input.name + "=...");
  std::vector<int64_t> out;
  for (const auto& d : *input.shape.dims) {
    if (d.value) { out.push_back(*d.value); continue; }
    if (!d.param.empty()) {
      if (auto it = o.dims.find(d.param); it != o.dims.end()) { out.push_back(it->second); continue; }
      throw UsageError("input '" + input.name + "' has symbolic dim '" + d.param + "'; set it with --dim " + d.param + "=N");
    }
    throw UsageError("input '" + input.name + "' has an unknown dim; set the shape with --shape " + input.name + "=...");
  }
  return out;
}

ir::BoundSample random_sample(const ir::Graph& g, const ShapeOverrides& o, uint64_t seed, int index) {
  ir::BoundSample s;
  s.name = "random_" + std::to_string(index);
  s.expected.resize(g.outputs.size());
  SplitMix64 rng{seed * 0x100000001b3ULL + static_cast<uint64_t>(index)};
  for (const ir::Value* in : g.inputs) {
    if (in->initializer) continue;
    if (!in->type_passthrough.bytes.empty())
      throw UnsupportedError("input '" + in->name + "' is not a tensor; random inputs cannot be generated for it");
    ir::Tensor t = ir::Tensor::allocate(in->dtype, resolve_input_shape(*in, o));
    ir::dispatch<MCC_ALL_DTYPES>(in->dtype, "random input '" + in->name + "'", [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (T& v : t.mutable_data<T>()) {
        if constexpr (std::is_same_v<T, bool>) v = (rng.next() & 1) != 0;
        else if constexpr (std::is_integral_v<T>) v = static_cast<T>(rng.next() % 10);
        else v = static_cast<T>(static_cast<float>(rng.uniform() * 2.0 - 1.0));
      }
    });
    s.feeds.emplace_back(in->name, std::move(t));
  }
  return s;
}

std::vector<std::string> sample_dirs(const std::string& dir, size_t limit) {
  auto dirs = ir::list_sample_dirs(dir);
  if (limit && dirs.size() > limit) dirs.resize(limit);
  return dirs;
}

backends::RValue to_rvalue(const ir::TestValue& v) {
  switch (v.kind) {
    case ir::TestValue::Kind::Sequence: return backends::RValue::sequence(v.seq);
    case ir::TestValue::Kind::None: return backends::RValue::none();
    default: return backends::RValue::of(v.tensor);
  }
}

SampleFeeds to_feeds(ir::BoundSample& s) {
  SampleFeeds feeds;
  for (auto& [n, t] : s.feeds) feeds.emplace_back(n, backends::RValue::of(t));
  for (auto& [n, v] : s.value_feeds) feeds.emplace_back(n, to_rvalue(v));
  return feeds;
}

}  // namespace mcc::io
