// The check stage: compares the model the pipeline has built so far with the pipeline's input
// model on held-back input samples, and fails the run (exit 1, no model written) when the result
// misses its accuracy budget. See check/check.cpp.
#pragma once
#include <memory>

#include <nlohmann/json.hpp>

#include "ir/errors.h"
#include "transforms/pipeline/pass.h"

namespace mcc::transforms::check {

/// Thrown when a budget is not met; carries the stage's record (every measured figure) so the
/// command can write it to a report before it exits 1.
class CheckFailed : public AccuracyError {
 public:
  CheckFailed(const std::string& msg, nlohmann::ordered_json record)
      : AccuracyError(msg), record_(std::move(record)) {}
  const nlohmann::ordered_json& record() const { return record_; }

 private:
  nlohmann::ordered_json record_;
};

std::unique_ptr<Pass> make_pass();

}  // namespace mcc::transforms::check
