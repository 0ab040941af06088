// Shared by the libFuzzer targets in fuzz/: runs one input so that mcc's own errors (mcc::Error
// and its subclasses, the errors the CLI maps to exit codes) count as a normal refusal, while a
// std:: exception that is not an mcc::Error, or an error message spanning several lines, aborts
// the process — libFuzzer then records the input as a finding. Scratch files live in one
// per-process folder under $MCC_FUZZ_SCRATCH (else /dev/shm, $TMPDIR or /tmp) and are reused across inputs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace mcc::fuzz {

/// The input as a string.
std::string bytes(const uint8_t* data, size_t size);
/// A per-process scratch folder, created on first use.
const std::string& scratch_dir();
/// Writes `data` to `scratch_dir()/name` (truncating) and returns the path.
std::string write_scratch(const std::string& name, const std::string& data);
/// Prints "FUZZ FINDING: what" to stderr and aborts.
[[noreturn]] void finding(const std::string& what);
/// Checks an mcc error's text is one line (the CLI prints it as the whole diagnostic).
void check_error_text(const char* what);

/// Whether an mcc error's text must be one line. ModelText: the message may quote names from
/// the model verbatim (ONNX names are arbitrary bytes; the CLI escapes what it prints).
enum class ErrorText { OneLine, ModelText };

/// Runs `f` on one input; see the header comment for what counts as a finding.
template <class F>
int run_one(F&& f, ErrorText text = ErrorText::OneLine);

}  // namespace mcc::fuzz

#include "fuzz/fuzz_support_impl.h"
