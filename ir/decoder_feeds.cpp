// Empty-cache prefill feeds for KV-cache decoders (see decoder_feeds.h).
#include "ir/decoder_feeds.h"

#include <algorithm>
#include <cstdint>

#include "ir/errors.h"

namespace mcc::ir {

bool is_past_cache_input(const Value& v) {
  if (v.initializer || !v.shape.dims || v.shape.dims->size() != 4) return false;
  if (v.name.find("past") == std::string::npos) return false;
  return !(*v.shape.dims)[2].value.has_value();
}

namespace {

const Tensor* fed(const BoundSample& s, const std::string& name) {
  for (const auto& [n, t] : s.feeds)
    if (n == name) return &t;
  return nullptr;
}

bool is_fed(const BoundSample& s, const std::string& name) {
  if (fed(s, name)) return true;
  return std::any_of(s.value_feeds.begin(), s.value_feeds.end(), [&](const auto& f) { return f.first == name; });
}

Tensor integer_tensor(DType dt, std::vector<int64_t> dims, int64_t (*value)(int64_t row, int64_t col)) {
  Tensor t = Tensor::allocate(dt, dims);
  const int64_t rows = dims[0], cols = dims[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      if (dt == DType::I64) t.mutable_data<int64_t>()[static_cast<size_t>(r * cols + c)] = value(r, c);
      else t.mutable_data<int32_t>()[static_cast<size_t>(r * cols + c)] = static_cast<int32_t>(value(r, c));
    }
  return t;
}

}  // namespace

std::vector<std::string> fill_decoder_cache_inputs(const Graph& g, BoundSample& s) {
  std::vector<std::string> filled;
  if (std::none_of(g.inputs.begin(), g.inputs.end(), [](const Value* v) { return is_past_cache_input(*v); }))
    return filled;
  // [batch, seq] of input_ids, read before feeds are added (that may move the vector's tensors).
  int64_t batch = -1, seq = -1;
  if (const Tensor* ids = fed(s, "input_ids"); ids && ids->dims().size() == 2) {
    batch = ids->dims()[0];
    seq = ids->dims()[1];
  }
  for (const Value* v : g.inputs) {
    if (v->initializer || is_fed(s, v->name)) continue;
    const bool cache = is_past_cache_input(*v);
    const bool mask = v->name == "attention_mask", positions = v->name == "position_ids";
    if (!cache && !mask && !positions) continue;  // left for the executor to report as missing
    if (batch < 0)
      throw ModelError("sample '" + s.name + "': input '" + v->name +
                       "' is not in the sample, and without an input_ids [batch, seq] file it cannot be fed as an empty-cache prefill");
    if (cache) {
      const auto& d = *v->shape.dims;
      if (!d[1].value || !d[3].value)
        throw ModelError("sample '" + s.name + "': cache input '" + v->name +
                         "' has no fixed head count or head size; give it in the sample");
      s.feeds.emplace_back(v->name, Tensor::allocate(v->dtype, {batch, *d[1].value, 0, *d[3].value}));
    } else {
      const DType dt = v->dtype == DType::I32 ? DType::I32 : DType::I64;
      s.feeds.emplace_back(v->name, mask ? integer_tensor(dt, {batch, seq}, [](int64_t, int64_t) -> int64_t { return 1; })
                                         : integer_tensor(dt, {batch, seq}, [](int64_t, int64_t c) { return c; }));
    }
    filled.push_back(v->name);
  }
  return filled;
}

}  // namespace mcc::ir
