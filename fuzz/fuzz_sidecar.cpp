// libFuzzer target: a `--state` file -> cli::read_sidecar -> the recorded pipeline parsed with
// transforms::Pipeline::parse_recorded -> transforms::check_replay_records, the steps `mcc convert
// --state` takes before it touches any model (cli/cmd_convert.cpp). An mcc error is a refusal; a
// crash, sanitizer report, std:: exception (nlohmann's type errors included) or multi-line error
// is a finding. The input sha256 check against the model is skipped (no model here).
#include "io/sidecar.h"
#include "fuzz/fuzz_support.h"
#include "transforms/pipeline/pass_manager.h"
#include "transforms/pipeline/pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcc;
  return fuzz::run_one([&] {
    const std::string path = fuzz::write_scratch("state.mcc.json", fuzz::bytes(data, size));
    nlohmann::ordered_json state = io::read_sidecar(path);
    (void)state["input"]["sha256"].get<std::string>();
    transforms::Pipeline pipeline;
    try {
      pipeline = transforms::Pipeline::parse_recorded(state["pipeline"].get<std::string>());
    } catch (const UsageError& e) {
      throw ModelError(path + ": the recorded pipeline is not valid for this mcc (" + e.message() + ")");
    }
    transforms::check_replay_records(
        pipeline, state.contains("stages") ? state["stages"] : nlohmann::ordered_json(), path);
  });
}
