// mcc passes [--json]: every stage a pipeline spec may name, with its options (type, default,
// allowed values, help), and the named bundles; sorted by name.
#include <memory>

#include "cli/commands.h"
#include "cli/common_flags.h"
#include "io/json_text.h"
#include "io/terminal.h"
#include "transforms/pipeline/pass_registry.h"
#include "transforms/pipeline/pipeline.h"

namespace mcc::cli {

struct PassesOptions {
  bool json = false;
};

nlohmann::ordered_json passes_json(const transforms::PassRegistry& r) {
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const auto* info : r.list()) {
    nlohmann::ordered_json opts = nlohmann::ordered_json::array();
    for (const auto& o : info->options)
      opts.push_back({{"key", o.key},
                      {"type", transforms::option_type_name(o.type)},
                      {"default", o.default_value},
                      {"choices", o.choices},
                      {"help", o.help}});
    stages.push_back({{"name", info->name}, {"summary", info->summary}, {"options", opts}});
  }
  nlohmann::ordered_json bundles = nlohmann::ordered_json::array();
  for (const auto* b : r.bundles())
    bundles.push_back({{"name", b->name}, {"pipeline", b->spec}, {"summary", b->summary}});
  return {{"stages", stages}, {"bundles", bundles}};
}

std::string passes_text(const transforms::PassRegistry& r) {
  std::string out;
  if (r.list().empty()) out += "(no stages in this build)\n";
  for (const auto* info : r.list()) {
    out += info->name + "  " + info->summary + "\n";
    for (const auto& o : info->options) {
      std::string line = "    " + o.key + "=" +
                         (o.default_value.empty() ? "\"\"" : o.default_value) + "  (" +
                         transforms::option_type_name(o.type);
      if (!o.choices.empty()) {
        line += ": ";
        for (size_t i = 0; i < o.choices.size(); ++i) line += (i ? "|" : "") + o.choices[i];
      }
      out += line + ")  " + o.help + "\n";
    }
  }
  if (!r.bundles().empty()) out += "\nbundles:\n";
  for (const auto* b : r.bundles())
    out += "  " + b->name + " = " + b->spec + "  " + b->summary + "\n";
  out +=
      "\nSpec: stage(,stage)*, stage = [label:]name[{key=value key=value}]; lists are "
      "comma-separated;\n"
      "'mcc convert MODEL -o OUT -p SPEC --dry-run' prints the canonical form.\n";
  return out;
}

void add_passes_command(CLI::App& app, CommandSlot& slot) {
  auto opt = std::make_shared<PassesOptions>();
  auto* sub =
      app.add_subcommand("passes", "List pipeline stages, their options, defaults and help");
  add_json_flag(sub, opt->json, "the list");
  sub->footer(
      "Examples:\n"
      "  mcc passes\n"
      "  mcc passes --json | jq '.stages[].name'");
  sub->callback([opt, &slot] {
    slot.set([opt] {
      const auto& r = transforms::builtin_passes();
      if (opt->json)
        io::print_requested(io::dump_json(passes_json(r), 2) + "\n");
      else
        io::print_out("%s", passes_text(r).c_str());
      return 0;
    });
  });
}

}  // namespace mcc::cli
