// libFuzzer target: ONNX test-data .pb bytes -> ir::load_tensor_pb and ir::load_value_pb (as a
// tensor, a sequence and an optional declared type), through a scratch file as the CLI reads
// them. The first byte picks the declared type; the rest is the file. An mcc error is a refusal
// (its text may quote names from the file verbatim); a crash, sanitizer report or std::
// exception is a finding.
#include "fuzz/fuzz_support.h"
#include "ir/onnx_io.h"

namespace {

// TypeProto bytes: sequence(tensor(float)) and optional(tensor(float)).
const std::string kSequenceType("\x22\x06\x0a\x04\x0a\x02\x08\x01", 8);
const std::string kOptionalType("\x4a\x06\x0a\x04\x0a\x02\x08\x01", 8);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcc;
  if (size == 0) return 0;
  return fuzz::run_one([&] {
    const std::string path = fuzz::write_scratch("value.pb", fuzz::bytes(data + 1, size - 1));
    switch (data[0] % 3) {
      case 0:
        (void)ir::load_tensor_pb(path);
        break;
      case 1: {
        ir::Value v;
        v.type_passthrough.bytes = kSequenceType;
        (void)ir::load_value_pb(path, v);
        break;
      }
      default: {
        ir::Value v;
        v.type_passthrough.bytes = kOptionalType;
        (void)ir::load_value_pb(path, v);
        break;
      }
    }
  }, fuzz::ErrorText::ModelText);
}
