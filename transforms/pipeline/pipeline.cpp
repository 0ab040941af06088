// Pipeline specs: the inline tokenizer, validation against the registry, canonical printing.
// File forms (JSON, YAML) are read in pipeline_file.cpp into the same raw stages.
#include "transforms/pipeline/pipeline.h"

#include <charconv>
#include <cmath>
#include <map>

#include "ir/errors.h"
#include "transforms/pipeline/pipeline_raw.h"

namespace mcc::transforms {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw UsageError(where + ": " + what);
}

bool valid_label(std::string_view s) {
  if (s.empty() || !(s[0] >= 'a' && s[0] <= 'z')) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

/// A value needs quotes in the canonical form when the unquoted grammar would read it differently.
bool needs_quotes(std::string_view v) {
  for (char c : v)
    if (is_space(c) || c == '{' || c == '}' || c == '"' || c == '\\') return true;
  return false;
}

std::string quote_value(std::string_view v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? std::string(sep) : "") + items[i];
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

/// Inline tokenizer state: position and column-based error prefixes.
class Tokenizer {
 public:
  Tokenizer(std::string_view s, std::string what) : s_(s), what_(std::move(what)) {}

  std::vector<RawStage> run() {
    std::vector<RawStage> out;
    skip_ws();
    if (at_end()) return out;  // the empty pipeline
    while (true) {
      out.push_back(stage());
      skip_ws();
      if (at_end()) return out;
      const char c = s_[pos_];
      if (c == '}') fail(where(pos_), "unbalanced braces: '}' without a matching '{'");
      if (c == '{')
        fail(where(pos_), "unexpected '{' (options follow a stage name directly: name{key=value})");
      if (c != ',')
        fail(where(pos_), std::string("expected ',' between stages, found '") + c + "'");
      ++pos_;
    }
  }

 private:
  bool at_end() const { return pos_ >= s_.size(); }
  void skip_ws() {
    while (!at_end() && is_space(s_[pos_])) ++pos_;
  }
  std::string where(size_t pos) const { return what_ + ", column " + std::to_string(pos + 1); }

  /// A label, stage name or option key: up to a delimiter.
  std::string word(std::string_view stops) {
    const size_t b = pos_;
    while (!at_end() && !is_space(s_[pos_]) && stops.find(s_[pos_]) == std::string_view::npos)
      ++pos_;
    return std::string(s_.substr(b, pos_ - b));
  }

  RawStage stage() {
    RawStage st;
    skip_ws();
    const size_t b = pos_;
    if (at_end() || s_[pos_] == ',')
      fail(where(pos_), "empty stage (a ',' with no stage " +
                            std::string(at_end() ? "after" : "before") + " it)");
    std::string w = word(",{}:");
    skip_ws();
    if (!at_end() && s_[pos_] == ':') {
      st.has_label = true;
      st.label = w;
      st.label_where = where(b);
      if (w.empty()) fail(where(b), "empty label before ':'");
      ++pos_;
      skip_ws();
      const size_t nb = pos_;
      st.where = where(nb);
      w = word(",{}:");
      if (w.empty()) fail(where(nb), "empty stage name after label '" + st.label + ":'");
    } else {
      st.where = where(b);
    }
    if (w.empty()) fail(where(b), std::string("empty stage name before '") + s_[pos_] + "'");
    st.name = w;
    skip_ws();
    if (!at_end() && s_[pos_] == '{') options(st);
    return st;
  }

  void options(RawStage& st) {
    const size_t open = pos_++;
    while (true) {
      skip_ws();
      if (at_end()) fail(where(open), "unbalanced braces: '{' is never closed");
      if (s_[pos_] == '}') {
        ++pos_;
        return;
      }
      const size_t kb = pos_;
      if (s_[pos_] == '{') fail(where(pos_), "unbalanced braces: '{' inside options");
      std::string key = word("=,{}");
      if (key.empty())
        fail(where(kb), std::string("expected an option key, found '") + s_[pos_] + "'");
      if (at_end() || s_[pos_] != '=')
        fail(where(kb), "option '" + key + "' of stage '" + st.name + "' has no value (write " +
                            key + "=VALUE)");
      ++pos_;
      RawOption opt{key, value(), where(kb)};
      for (const auto& o : st.options)
        if (o.key == key)
          fail(where(kb), "option '" + key + "' of stage '" + st.name + "' is given twice");
      st.options.push_back(std::move(opt));
      if (!at_end() && !is_space(s_[pos_]) && s_[pos_] != '}')
        fail(where(pos_),
             std::string("unexpected '") + s_[pos_] + "' after the value of option '" + key + "'");
    }
  }

  std::string value() {
    std::string v;
    if (!at_end() && s_[pos_] == '"') {
      const size_t q = pos_++;
      while (true) {
        if (at_end()) fail(where(q), "unterminated '\"' in option value");
        const char c = s_[pos_++];
        if (c == '"') return v;
        if (c == '\\' && !at_end())
          v += s_[pos_++];
        else
          v += c;
      }
    }
    while (!at_end() && !is_space(s_[pos_]) && s_[pos_] != '}') {
      if (s_[pos_] == '{')
        fail(where(pos_), "unbalanced braces: '{' inside an option value (quote the value)");
      if (s_[pos_] == '"') fail(where(pos_), "'\"' inside an option value (quote the whole value)");
      v += s_[pos_++];
    }
    return v;
  }

  std::string_view s_;
  std::string what_;
  size_t pos_ = 0;
};

constexpr int kMaxBundleDepth = 8;

void expand(const std::vector<RawStage>& in, const PassRegistry& r, int depth,
            std::vector<RawStage>& out) {
  for (const auto& st : in) {
    const Bundle* b = r.find(st.name) ? nullptr : r.find_bundle(st.name);
    if (!b) {
      out.push_back(st);
      continue;
    }
    if (st.has_label || !st.options.empty())
      fail(st.where, "bundle '" + st.name +
                         "' takes no label or options; write its stages out to set them (" +
                         b->spec + ")");
    MCC_CHECK(depth < kMaxBundleDepth, "bundle '" + st.name + "' nests too deep (a cycle?)");
    expand(tokenize_inline(b->spec, "bundle '" + b->name + "'"), r, depth + 1, out);
  }
}

std::vector<std::string> option_keys(const PassInfo& info) {
  std::vector<std::string> keys;
  for (const auto& o : info.options) keys.push_back(o.key);
  return keys;
}

}  // namespace

const char* option_type_name(OptionType t) {
  switch (t) {
    case OptionType::Bool:
      return "bool";
    case OptionType::Int:
      return "int";
    case OptionType::Float:
      return "float";
    case OptionType::String:
      return "string";
    case OptionType::StringList:
      return "list";
  }
  return "?";
}

std::string canonical_option_value(const std::string& stage, const OptionSpec& spec,
                                   std::string_view value) {
  const std::string what = "bad value '" + std::string(value) + "' for option '" + spec.key +
                           "' of stage '" + stage + "'";
  std::string out;
  switch (spec.type) {
    case OptionType::Bool: {
      const std::string v = lower(value);
      if (v == "true" || v == "1" || v == "yes" || v == "on")
        out = "true";
      else if (v == "false" || v == "0" || v == "no" || v == "off")
        out = "false";
      else
        throw UsageError(what + ": expected true or false");
      break;
    }
    case OptionType::Int: {
      int64_t x = 0;
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
      if (value.empty() || ec != std::errc() || p != value.data() + value.size())
        throw UsageError(what + ": expected an integer");
      out = std::to_string(x);
      break;
    }
    case OptionType::Float: {
      double x = 0;
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
      if (value.empty() || ec != std::errc() || p != value.data() + value.size() ||
          !std::isfinite(x))
        throw UsageError(what + ": expected a finite number");
      char buf[64];
      const auto r =
          std::to_chars(buf, buf + sizeof buf, x);  // shortest text that parses back to x
      out.assign(buf, r.ptr);
      break;
    }
    case OptionType::String:
      out = std::string(value);
      break;
    case OptionType::StringList: {
      std::vector<std::string> items;
      const std::string all = trim(value);
      size_t p = 0;
      while (!all.empty()) {
        const size_t c = all.find(',', p);
        std::string item = trim(
            std::string_view(all).substr(p, c == std::string::npos ? std::string::npos : c - p));
        if (item.empty())
          throw UsageError(what + ": empty item in the list (items are separated by single ',')");
        items.push_back(std::move(item));
        if (c == std::string::npos) break;
        p = c + 1;
      }
      for (const auto& item : items)
        if (!spec.choices.empty() &&
            std::find(spec.choices.begin(), spec.choices.end(), item) == spec.choices.end())
          throw UsageError("bad item '" + item + "' for option '" + spec.key + "' of stage '" +
                           stage + "': expected items from " + join(spec.choices, ", ") +
                           did_you_mean(item, spec.choices));
      return join(items, ",");
    }
  }
  if (!spec.choices.empty() &&
      std::find(spec.choices.begin(), spec.choices.end(), out) == spec.choices.end())
    throw UsageError(what + ": expected one of " + join(spec.choices, ", ") +
                     did_you_mean(out, spec.choices));
  return out;
}

std::vector<RawStage> tokenize_inline(std::string_view spec, const std::string& what) {
  return Tokenizer(spec, what).run();
}

Pipeline PipelineBuilder::build(const std::vector<RawStage>& raw_in, const PassRegistry& r, bool recorded) {
  std::vector<RawStage> raw;
  expand(raw_in, r, 0, raw);
  Pipeline p;
  std::map<std::string, int> repeats;
  std::map<std::string, std::string> label_at;  // label -> where it was defined
  std::map<std::string, std::string> stage_at;  // stage name -> where it first appears
  for (const auto& st : raw) {
    const PassInfo* info = r.find(st.name);
    if (!info)
      fail(st.where, "unknown stage '" + st.name + "'" + did_you_mean(st.name, r.names()) +
                         "; run 'mcc passes' for the list");
    // Impossible orders are declared by the stages themselves (PassInfo::not_after).
    for (const auto& [earlier, why] : info->not_after) {
      auto at = stage_at.find(earlier);
      if (at == stage_at.end()) continue;
      const PassInfo* other = r.find(earlier);
      const bool both_ways = other && std::any_of(other->not_after.begin(), other->not_after.end(),
                                                  [&](const auto& e) { return e.first == st.name; });
      const auto col = at->second.rfind(", ");
      fail(st.where, "stage '" + st.name + "' cannot run after '" + earlier + "' (" +
                         (col == std::string::npos ? at->second : at->second.substr(col + 2)) + "): " + why +
                         (both_ways ? "; use one of them" : "; put '" + st.name + "' before '" + earlier + "'"));
    }
    stage_at.emplace(st.name, st.where);
    Stage s;
    s.info = *info;
    const int n = ++repeats[st.name];
    s.default_label = n == 1 ? st.name : st.name + "." + std::to_string(n);
    if (st.has_label && !valid_label(st.label))
      fail(st.label_where, "invalid label '" + st.label +
                               "' (a label starts with a lowercase letter, then lowercase letters, "
                               "digits, '_' or '-')");
    s.label = st.has_label ? st.label : s.default_label;
    const auto [it, fresh] = label_at.emplace(s.label, st.has_label ? st.label_where : st.where);
    if (!fresh)
      fail(st.has_label ? st.label_where : st.where, "duplicate label '" + s.label +
                                                         "' (already used at " + it->second +
                                                         "); give each stage its own label");
    std::vector<std::pair<std::string, std::string>> values;
    for (const auto& o : st.options) {
      const auto spec = std::find_if(info->options.begin(), info->options.end(),
                                     [&](const OptionSpec& os) { return os.key == o.key; });
      if (spec == info->options.end()) {
        const auto keys = option_keys(*info);
        fail(o.where, "unknown option '" + o.key + "' for stage '" + st.name + "'" +
                          did_you_mean(o.key, keys) +
                          (keys.empty() ? "; the stage takes no options"
                                        : "; options: " + join(keys, ", ")));
      }
      for (const auto& [k, v] : values)
        if (k == o.key)
          fail(o.where, "option '" + o.key + "' of stage '" + st.name + "' is given twice");
      try {
        values.emplace_back(o.key, canonical_option_value(st.name, *spec, o.value));
      } catch (UsageError& e) {
        e.add_context(o.where);
        throw;
      }
    }
    // Defaults go through the same canonicalisation so the printed form never depends on how a
    // stage spelled its default ("1e-3" and "0.001" print the same).
    for (const auto& spec : info->options) {
      bool given = false;
      for (const auto& [k, v] : values) given = given || k == spec.key;
      if (!given) {
        try {
          const std::string& absent = recorded && !spec.recorded_default.empty() ? spec.recorded_default : spec.default_value;
          values.emplace_back(spec.key, canonical_option_value(st.name, spec, absent));
        } catch (const UsageError& e) {
          throw InternalError("stage '" + st.name + "' declares an invalid default: " + e.what());
        }
      }
    }
    s.options = Options(*info, std::move(values));
    p.stages_.push_back(std::move(s));
  }
  return p;
}

Pipeline Pipeline::parse(std::string_view spec, const PassRegistry& registry) {
  return with_one_line_errors([&] {
    return PipelineBuilder::build(tokenize_inline(spec, "pipeline '" + std::string(spec) + "'"),
                                  registry);
  });
}

Pipeline Pipeline::parse_recorded(std::string_view spec, const PassRegistry& registry) {
  return with_one_line_errors([&] {
    return PipelineBuilder::build(tokenize_inline(spec, "pipeline '" + std::string(spec) + "'"),
                                  registry, /*recorded=*/true);
  });
}

std::string one_line(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (u < 0x20 || u == 0x7f)
      out += std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
    else
      out += c;
  }
  return out;
}

std::string Pipeline::to_string() const {
  std::string out;
  for (size_t i = 0; i < stages_.size(); ++i) {
    const Stage& s = stages_[i];
    if (i) out += ',';
    if (s.label != s.default_label) out += s.label + ':';
    out += s.pass();
    const auto& items = s.options.items();
    if (items.empty()) continue;
    out += '{';
    for (size_t k = 0; k < items.size(); ++k) {
      if (k) out += ' ';
      out += items[k].first + '=' +
             (needs_quotes(items[k].second) ? quote_value(items[k].second) : items[k].second);
    }
    out += '}';
  }
  return out;
}

nlohmann::ordered_json Stage::options_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& spec : info.options) {
    switch (spec.type) {
      case OptionType::Bool:
        j[spec.key] = options.get_bool(spec.key);
        break;
      case OptionType::Int:
        j[spec.key] = options.get_int(spec.key);
        break;
      case OptionType::Float:
        j[spec.key] = options.get_float(spec.key);
        break;
      case OptionType::String:
        j[spec.key] = options.get_string(spec.key);
        break;
      case OptionType::StringList:
        j[spec.key] = options.get_list(spec.key);
        break;
    }
  }
  return j;
}

nlohmann::ordered_json Pipeline::to_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& s : stages_) {
    nlohmann::ordered_json st = nlohmann::ordered_json::object();
    if (s.label != s.default_label) st["label"] = s.label;  // "fold.2" is implied, and not writable
    st["stage"] = s.pass();
    st["options"] = s.options_json();
    j.push_back(std::move(st));
  }
  return j;
}

}  // namespace mcc::transforms
