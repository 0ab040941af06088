// mcc error hierarchy. Library code throws these; only cli/main.cpp maps them to exit codes.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace mcc {

/// Base of every error mcc raises on purpose. Carries a context stack that layers add to as the
/// exception passes through them ("node 'conv3' (Conv-11)", "stage 'q' (quantize)").
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg), message_(msg) {}
  /// Adds an outer context ("in stage 'x'"); the full message reads outermost first.
  void add_context(std::string ctx) { context_.push_back(std::move(ctx)); rebuild(); }
  const std::string& message() const { return message_; }
  const char* what() const noexcept override { return full_.empty() ? message_.c_str() : full_.c_str(); }

 private:
  void rebuild() {
    full_.clear();
    for (auto it = context_.rbegin(); it != context_.rend(); ++it) full_ += *it + ": ";
    full_ += message_;
  }
  std::string message_, full_;
  std::vector<std::string> context_;
};

/// Exit 1: an accuracy check failed.
class AccuracyError : public Error { using Error::Error; };
/// Exit 2: bad flags, bad pipeline spec, unknown stage or option.
class UsageError : public Error { using Error::Error; };
/// Exit 3: malformed or truncated model/data/state file, missing external data, state mismatch.
class ModelError : public Error { using Error::Error; };
/// Exit 4: op, opset, dtype or feature mcc does not handle.
class UnsupportedError : public Error { using Error::Error; };
/// Exit 5: backend unavailable or failed, out of memory.
class BackendError : public Error { using Error::Error; };
/// Exit 70: a broken internal invariant (a bug).
class InternalError : public Error { using Error::Error; };

}  // namespace mcc

/// Internal invariant check (never for user input): throws InternalError with file:line.
#define MCC_CHECK(cond, msg)                                                                  \
  do {                                                                                        \
    if (!(cond))                                                                              \
      throw ::mcc::InternalError(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                 ": check '" #cond "' failed: " + (msg));                  \
  } while (0)
