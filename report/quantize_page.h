// `mcc quantize --html FILE`: the comparison page of report/comparison_page.h for a written
// quantized model against its input model, on the samples the run's check stage judged and with
// that stage's figures as the verdict. Everything is read back from the sidecar the run wrote: the check
// record's data folder, holdout and sample count pick the same sample folders (their hash must
// match the recorded one). Does not apply to a sidecar without a check stage (a run with
// --no-check, or without samples to hold back): UsageError.
#pragma once
#include <string>

namespace mcc::report {

/// `input`: the float model; `output`: the model the run wrote; `sidecar`: its state.
void write_quantize_html(const std::string& path, const std::string& input, const std::string& output,
                         const std::string& sidecar, int threads);

}  // namespace mcc::report
