// libFuzzer target: .npy bytes -> ir::load_npy (through a scratch file, as the CLI reads
// sample inputs). An mcc error is a refusal; a crash, sanitizer report, allocation beyond
// -malloc_limit_mb, std:: exception or multi-line error is a finding. A loaded tensor must
// survive ir::save_npy and load back with the same dims and bytes.
#include <cstring>

#include "fuzz/fuzz_support.h"
#include "ir/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcc;
  return fuzz::run_one([&] {
    const ir::Tensor t = ir::load_npy(fuzz::write_scratch("in.npy", fuzz::bytes(data, size)));
    const std::string out = fuzz::scratch_dir() + "/out.npy";
    ir::save_npy(t, out);
    const ir::Tensor back = ir::load_npy(out);
    if (back.dtype() != t.dtype() || back.dims() != t.dims() || back.nbytes() != t.nbytes() ||
        (t.nbytes() && std::memcmp(back.raw(), t.raw(), t.nbytes()) != 0))
      fuzz::finding(".npy save/load round trip changed the tensor");
  });
}
