// Pipeline specs from files: `-p @spec.json`, `-p @spec.yaml` (or .yml), and any other file as
// inline text. Both structured forms are read into the same raw stages as the inline parser, so
// validation and error wording are shared; errors name the file and the key path, and for YAML
// also line:column.
//
// YAML is read with yaml-cpp (Debian's libyaml-cpp-dev): pipeline files are written by hand, and
// YAML is what users of the anchor tools (NNCF, Distiller, Neural Compressor) write their configs
// in — comments, unquoted lists and no trailing-comma errors are worth the one well-kept library.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "ir/errors.h"
#include "transforms/pipeline/pipeline.h"
#include "transforms/pipeline/pipeline_raw.h"

namespace mcc::transforms {

namespace {

using json = nlohmann::ordered_json;
/// Key path ("pipeline[1].options.keep_io") -> error prefix.
using Locate = std::function<std::string(const std::string& path)>;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw UsageError(where + ": " + what);
}

std::string double_text(double x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

std::string scalar_text(const json& v, const std::string& where, bool allow_list) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) return double_text(v.get<double>());
  if (v.is_array() && allow_list) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string item = scalar_text(v[i], where + "[" + std::to_string(i) + "]", false);
      if (item.find(',') != std::string::npos) fail(where, "list item '" + item + "' contains ','");
      out += (i ? "," : "") + item;
    }
    return out;
  }
  fail(where, std::string("expected ") +
                  (allow_list ? "a value or a list of values" : "a single value") + ", found " +
                  (v.is_null() ? "nothing" : v.type_name()));
}

RawStage read_stage(const json& e, const std::string& path, const Locate& at) {
  RawStage st;
  st.where = at(path);
  if (e.is_string()) {
    st.name = e.get<std::string>();
    return st;
  }
  if (!e.is_object())
    fail(at(path), "a stage is {\"stage\": name, \"label\": ..., \"options\": {...}} or a name");
  static const std::vector<std::string> kKeys{"label", "options", "stage"};
  for (const auto& [k, v] : e.items())
    if (std::find(kKeys.begin(), kKeys.end(), k) == kKeys.end())
      fail(at(path + "." + k), "unknown key '" + k + "' in a stage" + did_you_mean(k, kKeys) +
                                   "; keys: stage, label, options");
  if (!e.contains("stage") || !e["stage"].is_string() || e["stage"].get<std::string>().empty())
    fail(at(path), "empty stage: \"stage\" (the stage name) is missing or not a string");
  st.name = e["stage"].get<std::string>();
  st.where = at(path + ".stage");
  if (e.contains("label")) {
    if (!e["label"].is_string()) fail(at(path + ".label"), "\"label\" must be a string");
    st.has_label = true;
    st.label = e["label"].get<std::string>();
    st.label_where = at(path + ".label");
  }
  if (e.contains("options") && !e["options"].is_null()) {
    const json& o = e["options"];
    if (!o.is_object()) fail(at(path + ".options"), "\"options\" must be a map of key: value");
    for (const auto& [k, v] : o.items()) {
      const std::string p = path + ".options." + k;
      st.options.push_back(RawOption{k, scalar_text(v, at(p), true), at(p)});
    }
  }
  return st;
}

std::vector<RawStage> read_pipeline(const json& root, const std::string& source, const Locate& at) {
  const json* list = &root;
  std::string prefix;
  if (root.is_object()) {
    for (const auto& [k, v] : root.items())
      if (k != "pipeline")
        fail(at(k), "unknown key '" + k +
                        "'; a pipeline file is a list of stages or {\"pipeline\": [...]}");
    if (!root.contains("pipeline"))
      fail(at(""),
           "no \"pipeline\" key; a pipeline file is a list of stages or {\"pipeline\": [...]}");
    list = &root["pipeline"];
    prefix = "pipeline";
    if (list->is_string()) return tokenize_inline(list->get<std::string>(), at("pipeline"));
  }
  if (list->is_null()) return {};
  if (!list->is_array()) fail(at(prefix), "expected a list of stages");
  std::vector<RawStage> out;
  for (size_t i = 0; i < list->size(); ++i)
    out.push_back(read_stage((*list)[i], prefix + "[" + std::to_string(i) + "]", at));
  return out;
}

/// YAML -> JSON (every scalar as a string: option values are validated from text anyway),
/// remembering where each key path starts.
json yaml_to_json(const YAML::Node& n, const std::string& path,
                  std::map<std::string, YAML::Mark>& marks) {
  marks.emplace(path, n.Mark());
  switch (n.Type()) {
    case YAML::NodeType::Scalar:
      return n.Scalar();
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (size_t i = 0; i < n.size(); ++i)
        a.push_back(yaml_to_json(n[i], path + "[" + std::to_string(i) + "]", marks));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) {
        const std::string k = kv.first.Scalar();
        const std::string p = path.empty() ? k : path + "." + k;
        marks.emplace(p, kv.first.Mark());
        o[k] = yaml_to_json(kv.second, p, marks);
      }
      return o;
    }
    default:
      return nullptr;
  }
}

std::string read_spec_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UsageError("-p @" + path + ": cannot read the pipeline file (missing or unreadable)");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw UsageError("-p @" + path + ": cannot read the pipeline file");
  return ss.str();
}

bool ends_with(const std::string& s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i])
      return false;
  return true;
}

}  // namespace

static Pipeline read_yaml(const std::string& text, const std::string& source,
                          const PassRegistry& registry);

Pipeline Pipeline::from_json(const nlohmann::ordered_json& j, const std::string& source,
                             const PassRegistry& registry) {
  const Locate at = [&](const std::string& p) { return p.empty() ? source : source + ": " + p; };
  return with_one_line_errors(
      [&] { return PipelineBuilder::build(read_pipeline(j, source, at), registry); });
}

Pipeline Pipeline::from_yaml(const std::string& text, const std::string& source,
                             const PassRegistry& registry) {
  return with_one_line_errors([&] { return read_yaml(text, source, registry); });
}

static Pipeline read_yaml(const std::string& text, const std::string& source,
                          const PassRegistry& registry) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UsageError(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                     std::to_string(e.mark.column + 1) + ": not valid YAML: " + e.msg);
  }
  std::map<std::string, YAML::Mark> marks;
  const json j = yaml_to_json(root, "", marks);
  const Locate at = [&](const std::string& p) {
    const auto it = marks.find(p);
    std::string w = source;
    if (it != marks.end() && it->second.line >= 0)
      w += ":" + std::to_string(it->second.line + 1) + ":" + std::to_string(it->second.column + 1);
    return p.empty() ? w : w + ": " + p;
  };
  return PipelineBuilder::build(read_pipeline(j, source, at), registry);
}

Pipeline Pipeline::from_argument(std::string_view arg, const PassRegistry& registry) {
  if (arg.empty() || arg[0] != '@') return parse(arg, registry);
  const std::string path(arg.substr(1));
  if (path.empty()) throw UsageError("-p @: no file name after '@' (write -p @pipeline.yaml)");
  const std::string text = read_spec_file(path);
  if (ends_with(path, ".json")) {
    json j;
    try {
      j = json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw UsageError(one_line(path + ": not valid JSON (" + e.what() + ")"));
    }
    return from_json(j, path, registry);
  }
  if (ends_with(path, ".yaml") || ends_with(path, ".yml")) return from_yaml(text, path, registry);
  return with_one_line_errors(
      [&] { return PipelineBuilder::build(tokenize_inline(text, path), registry); });
}

}  // namespace mcc::transforms
