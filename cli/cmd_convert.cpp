// mcc convert MODEL -o OUT [-p SPEC | --state STATE] [--sidecar PATH]: load, verify, run the
// pipeline (none yet: the empty pipeline is a lossless round trip), save atomically, and write the
// sidecar state `<OUT without .onnx>.mcc.json` atomically too. The input is read fully before
// anything is written and is never overwritten.
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/file_util.h"
#include "cli/sha256.h"
#include "cli/sidecar.h"
#include "ir/onnx_io.h"
#include "ir/verifier.h"

namespace fs = std::filesystem;

namespace mcc::cli {

struct ConvertOptions {
  std::string input, output, pipeline, state_path, sidecar_path;
  bool json = false;
};

namespace {

std::string folder_of(const std::string& path) {
  const auto p = fs::path(path).parent_path();
  return p.empty() ? "." : p.string();
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}

/// The canonical form of a pipeline spec. No stages exist in this build, so only the empty
/// pipeline is valid; anything else names an unknown stage (exit 2) before any work is done.
std::string canonical_pipeline(const std::string& spec) {
  const std::string s = trimmed(spec);
  if (s.empty()) return "";
  const std::string first = s.substr(0, s.find_first_of(",{ "));
  throw UsageError("unknown stage '" + first + "' in pipeline '" + s +
                   "'; this build has no stages yet, so use an empty pipeline (-p '')");
}

}  // namespace

int run_convert(const ConvertOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string sidecar = o.sidecar_path.empty() ? default_sidecar_path(o.output) : o.sidecar_path;
  // Everything the user could have got wrong is checked before any work is done.
  check_output_path(o.output, "-o");
  check_output_path(sidecar, "--sidecar");
  if (same_file(o.input, o.output))
    throw UsageError(o.output + ": -o names the input model; mcc never overwrites its input, choose another output path");
  if (same_file(sidecar, o.input) || same_file(sidecar, o.output))
    throw UsageError(sidecar + ": the sidecar path names the input or output model; choose another --sidecar");
  std::string pipeline = canonical_pipeline(o.pipeline);

  // Read the input fully; detach external data when the output goes to the same folder, so that
  // writing the output's data files cannot pull bytes from under the loaded model.
  const bool same_folder = same_file(folder_of(o.input), folder_of(o.output));
  InputModel in = load_input_model(o.input, same_folder, /*with_sha256=*/true);
  spdlog::debug("loaded {} ({} bytes, sha256 {})", o.input, in.size, in.sha256);

  if (!o.state_path.empty()) {
    const auto state = read_sidecar(o.state_path);
    const std::string want = state["input"]["sha256"].get<std::string>();
    if (want != in.sha256)
      throw ModelError(o.state_path + ": recorded for another input model (sha256 " + want.substr(0, 12) +
                       "..., this input " + in.sha256.substr(0, 12) + "...); pass the model it was made from");
    try {
      pipeline = canonical_pipeline(state["pipeline"].get<std::string>());
    } catch (UsageError& e) {
      throw ModelError(o.state_path + ": " + e.message());
    }
  }

  try {
    ir::verify(in.model);
  } catch (Error& e) {
    e.add_context(o.input + ": the model is not valid");
    throw;
  }

  try {
    ir::save_model(in.model, o.output);
  } catch (Error& e) {
    e.add_context("writing " + o.output);
    throw;
  }
  SidecarRecord rec;
  rec.input_path = o.input;
  rec.input_size = in.size;
  rec.input_sha256 = in.sha256;
  rec.output_path = o.output;
  rec.output_sha256 = sha256_file_hex(o.output);
  rec.pipeline = pipeline;
  rec.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto state = make_sidecar(rec);
  try {
    write_file_atomically(sidecar, dump_sidecar(state));
  } catch (...) {
    std::error_code ec;
    fs::remove(o.output, ec);  // no output without its state (the input is never o.output)
    throw;
  }
  spdlog::info("wrote {} and {}", o.output, sidecar);

  if (o.json) {
    nlohmann::ordered_json r = state;
    r["sidecar"] = sidecar;
    std::cout << r.dump(2) << "\n";
  } else {
    std::cout << "output:  " << o.output << "  sha256 " << rec.output_sha256 << "\n"
              << "state:   " << sidecar << "\n";
  }
  return 0;
}

void add_convert_command(CLI::App& app, CommandSlot& slot) {
  auto opt = std::make_shared<ConvertOptions>();
  auto* sub = app.add_subcommand("convert", "Run a pipeline of stages; write the model and its sidecar state");
  sub->add_option("model", opt->input, "Input .onnx file")->required();
  sub->add_option("-o,--output", opt->output, "Output .onnx file (written atomically)")->required();
  auto* p = sub->add_option("-p,--pipeline", opt->pipeline, "Pipeline spec, e.g. 'fold,fp16' (empty: round trip)");
  auto* s = sub->add_option("--state", opt->state_path, "Replay the pipeline recorded in this sidecar state");
  p->excludes(s);
  sub->add_option("--sidecar", opt->sidecar_path, "Where to write the state (default: <OUT without .onnx>.mcc.json)");
  sub->add_flag("--json", opt->json, "Print the run's state as JSON on stdout");
  sub->footer(
      "Examples:\n"
      "  mcc convert model.onnx -o out.onnx            # lossless round trip + out.mcc.json\n"
      "  mcc convert model.onnx -o out.onnx --state prev.mcc.json");
  sub->callback([opt, &slot] { slot.set([opt] { return run_convert(*opt); }); });
}

}  // namespace mcc::cli
