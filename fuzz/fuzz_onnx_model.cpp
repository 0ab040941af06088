// libFuzzer target: ONNX ModelProto bytes -> ir::load_model_from_bytes -> ir::verify ->
// ir::serialize_model -> load of the exported bytes. An mcc error is a refusal. Findings: a
// crash or sanitizer report, a std:: exception, and for a model that passes
// the verifier: an export mcc cannot load back, or one that changes on a second round trip.
// External data resolves against a scratch folder holding `weights.bin` (256 bytes).
#include "fuzz/fuzz_support.h"
#include "ir/onnx_io.h"
#include "ir/verifier.h"

namespace {

const std::string& model_dir() {
  static const std::string dir = [] {
    mcc::fuzz::write_scratch("weights.bin", std::string(256, '\x3f'));
    return mcc::fuzz::scratch_dir();
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcc;
  return fuzz::run_one([&] {
    ir::Model m = ir::load_model_from_bytes(fuzz::bytes(data, size), model_dir());
    bool valid = true;
    try {
      ir::verify(m);
    } catch (const Error&) {
      valid = false;
    }
    const std::string once = ir::serialize_model(m);
    if (!valid) return;
    std::string twice;
    try {
      twice = ir::serialize_model(ir::load_model_from_bytes(once, model_dir()));
    } catch (const Error& e) {
      fuzz::finding(std::string("mcc cannot load its own export of a valid model: ") + e.what());
    }
    if (twice != once) fuzz::finding("a second load/export round trip changed the bytes");
  }, fuzz::ErrorText::ModelText);
}
