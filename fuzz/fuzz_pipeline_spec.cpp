// libFuzzer target: inline pipeline spec text (`-p SPEC`) -> transforms::Pipeline::parse. An
// mcc error is a refusal; a crash, sanitizer report, std:: exception or multi-line error is a
// finding, and so is a canonical form (to_string) that does not parse back to itself, or a
// file form (to_json) that does not give the same pipeline.
#include "fuzz/fuzz_support.h"
#include "transforms/pipeline/pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcc;
  return fuzz::run_one([&] {
    const auto p = transforms::Pipeline::parse(fuzz::bytes(data, size));
    const std::string canonical = p.to_string();
    std::string again, from_file;
    try {
      again = transforms::Pipeline::parse(canonical).to_string();
      from_file = transforms::Pipeline::from_json(p.to_json(), "canonical.json").to_string();
    } catch (const Error& e) {
      fuzz::finding("the canonical form '" + canonical + "' does not parse back: " + e.what());
    }
    if (again != canonical) fuzz::finding("canonical form not stable: '" + canonical + "' -> '" + again + "'");
    if (from_file != canonical) fuzz::finding("file form differs: '" + canonical + "' -> '" + from_file + "'");
  });
}
