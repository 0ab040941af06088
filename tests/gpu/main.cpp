// Main of mcc_gpu_tests: the cuda backend's tests (tests/backends/cuda) against the real device.
// Without a CUDA device it prints why and exits 77, which ctest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "backends/cuda/runtime/device_api.h"

int main(int argc, char** argv) {
  if (mcc::cuda::device_count() == 0) {
    std::fprintf(stderr, "\n==== gpu suite: SKIPPED, no CUDA device (%s) ====\n\n",
                 mcc::cuda::unavailable_reason().c_str());
    return 77;
  }
  std::fprintf(stderr, "gpu suite: on %s\n", mcc::cuda::device_description().c_str());
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
