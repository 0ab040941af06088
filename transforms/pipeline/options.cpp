// Options: typed getters over a stage's resolved option values.
#include <charconv>

#include "ir/errors.h"
#include "transforms/pipeline/pass.h"

namespace mcc::transforms {

Options::Options(const PassInfo& info, std::vector<std::pair<std::string, std::string>> values) {
  // Declaration order, defaults filled in; unknown keys are an internal error here because the
  // spec parser rejects them (exit 2) before a pass is built.
  for (const auto& spec : info.options) {
    std::string v = spec.default_value;
    for (const auto& [k, val] : values)
      if (k == spec.key) v = val;
    values_.emplace_back(spec.key, v);
  }
  for (const auto& [k, val] : values) {
    bool known = false;
    for (const auto& spec : info.options) known = known || spec.key == k;
    MCC_CHECK(known, "option '" + k + "' is not declared by stage '" + info.name + "'");
  }
}

const std::string& Options::raw(const std::string& key) const {
  for (const auto& [k, v] : values_)
    if (k == key) return v;
  throw InternalError("option '" + key + "' is not declared by this stage");
}

bool Options::get_bool(const std::string& key) const {
  const auto& v = raw(key);
  return v == "true" || v == "1" || v == "yes" || v == "on";
}

int64_t Options::get_int(const std::string& key) const {
  const auto& v = raw(key);
  int64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  MCC_CHECK(ec == std::errc() && p == v.data() + v.size(), "option '" + key + "' is not an integer: " + v);
  return x;
}

double Options::get_float(const std::string& key) const {
  const auto& v = raw(key);
  double x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  MCC_CHECK(ec == std::errc() && p == v.data() + v.size(), "option '" + key + "' is not a number: " + v);
  return x;
}

const std::string& Options::get_string(const std::string& key) const { return raw(key); }

std::vector<std::string> Options::get_list(const std::string& key) const {
  const auto& v = raw(key);
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= v.size() && !v.empty()) {
    const auto c = v.find(',', p);
    std::string item = v.substr(p, c == std::string::npos ? std::string::npos : c - p);
    if (!item.empty()) out.push_back(item);
    if (c == std::string::npos) break;
    p = c + 1;
  }
  return out;
}

}  // namespace mcc::transforms
