// mcc_roundtrip: loads an ONNX model and saves it again (load_model + save_model), for benchmarks.
// With -v it prints the load and save times to stderr.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>

#include "ir/onnx_io.h"

int main(int argc, char** argv) {
  const bool verbose = argc == 4 && std::strcmp(argv[1], "-v") == 0;
  if (argc != 3 && !verbose) {
    std::fprintf(stderr, "usage: mcc_roundtrip [-v] IN.onnx OUT.onnx\n");
    return 2;
  }
  const char* in = argv[argc - 2];
  const char* out = argv[argc - 1];
  try {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const mcc::ir::Model m = mcc::ir::load_model(in);
    const auto t1 = clock::now();
    mcc::ir::save_model(m, out);
    const auto t2 = clock::now();
    if (verbose)
      std::fprintf(stderr, "load %.3f s, save %.3f s\n", std::chrono::duration<double>(t1 - t0).count(),
                   std::chrono::duration<double>(t2 - t1).count());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mcc_roundtrip: %s\n", e.what());
    return 3;
  }
  return 0;
}
