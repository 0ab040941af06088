// mcc inspect MODEL [--json] [--dump] [--backend NAME]: what a model holds (opsets, I/O, op
// histogram, parameters by dtype, sparsity, quantized tensors, external data, subgraphs, metadata),
// or its IR as text; with --backend, also where each node would run on that backend (planned
// without a device, so `--backend cuda` works on a machine without a GPU).
#include <memory>

#include "backends/backend_registry.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "io/files.h"
#include "io/json_text.h"
#include "io/terminal.h"
#include "ir/printer.h"
#include "report/model_summary.h"
#include "report/placement_report.h"

namespace mcc::cli {

struct InspectOptions {
  std::string input;
  std::string backend;  // empty: no placement section
  bool json = false, dump = false;
};

int run_inspect(const InspectOptions& o) {
  io::InputModel in = io::load_input_model(o.input, /*detach_external=*/false, /*with_sha256=*/false);
  if (o.dump) {
    const std::string text = ir::print_model(in.model);
    if (o.json) io::print_requested(io::dump_json(nlohmann::ordered_json{{"path", o.input}, {"ir", text}}, 2) + "\n");
    else io::print_out("%s", text.c_str());
    return 0;
  }
  auto summary = report::summarize_model(in.model, o.input, in.size);
  std::string placement_text;
  if (!o.backend.empty()) {
    const auto& b = backends::find_backend(o.backend, /*allow_unavailable=*/true);
    const auto placement = backends::plan_placement(in.model, b);
    summary["placement"] = report::placement_json(placement);
    placement_text = report::render_placement(placement);
  }
  if (o.json) io::print_requested(io::dump_json(summary, 2) + "\n");
  else io::print_out("%s%s", report::render_summary(summary).c_str(), placement_text.c_str());
  return 0;
}

void add_inspect_command(CLI::App& app, CommandSlot& slot) {
  auto opt = std::make_shared<InspectOptions>();
  auto* sub = app.add_subcommand("inspect", "Summarize a model: opsets, I/O, ops, parameters, sparsity, quantization");
  sub->add_option("model", opt->input, "Input .onnx file")->required();
  add_json_flag(sub, opt->json, "the summary");
  sub->add_flag("--dump", opt->dump, "Print the model as deterministic text IR instead of the summary");
  sub->add_option("--backend", opt->backend,
                  "Also report where each node would run on this backend and why nodes fall back to the cpu "
                  "(planned only: no device needed)");
  sub->footer(
      "Examples:\n"
      "  mcc inspect model.onnx\n"
      "  mcc inspect model.onnx --json | python3 -m json.tool\n"
      "  mcc inspect model.onnx --dump > model.ir.txt\n"
      "  mcc inspect model.onnx --backend cuda --json   # placement, no GPU needed");
  sub->callback([opt, &slot] { slot.set([opt] { return run_inspect(*opt); }); });
}

}  // namespace mcc::cli
