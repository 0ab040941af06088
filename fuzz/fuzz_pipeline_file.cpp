// libFuzzer target: pipeline files (`-p @FILE`) -> transforms::Pipeline::from_argument. The first
// byte picks the file name's extension (.json, .yaml, .spec: inline text in a file); the rest is
// the file. An mcc error is a refusal; a crash, sanitizer report (stack overflow included), a
// std:: exception (yaml-cpp's or nlohmann's) or a multi-line error is a finding, and so is a
// canonical form (to_string) that does not parse back to itself.
#include "fuzz/fuzz_support.h"
#include "transforms/pipeline/pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcc;
  if (size == 0) return 0;
  static const char* const kNames[] = {"pipeline.json", "pipeline.yaml", "pipeline.spec"};
  return fuzz::run_one([&] {
    const std::string path = fuzz::write_scratch(kNames[data[0] % 3], fuzz::bytes(data + 1, size - 1));
    const auto p = transforms::Pipeline::from_argument("@" + path);
    const std::string canonical = p.to_string();
    std::string again;
    try {
      again = transforms::Pipeline::parse(canonical).to_string();
    } catch (const Error& e) {
      fuzz::finding("the canonical form '" + canonical + "' does not parse back: " + e.what());
    }
    if (again != canonical) fuzz::finding("canonical form not stable: '" + canonical + "' -> '" + again + "'");
  });
}
