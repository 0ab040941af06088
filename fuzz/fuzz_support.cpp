// Scratch files and finding reports for the libFuzzer targets (see fuzz_support.h).
#include "fuzz/fuzz_support.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace mcc::fuzz {

std::string bytes(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

const std::string& scratch_dir() {
  static const std::string dir = [] {
    namespace fs = std::filesystem;
    const char* given = std::getenv("MCC_FUZZ_SCRATCH");  // scripts/fuzz.sh sets and removes it
    const char* tmp = std::getenv("TMPDIR");
    fs::path base = given                         ? fs::path(given)
                    : fs::is_directory("/dev/shm") ? fs::path("/dev/shm")
                                                   : fs::path(tmp ? tmp : "/tmp");
    fs::path d = base / ("mcc-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d.string();
  }();
  return dir;
}

std::string write_scratch(const std::string& name, const std::string& data) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) finding("cannot write the scratch file " + path);
  return path;
}

void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

void check_error_text(const char* what) {
  if (std::strchr(what, '\n')) finding(std::string("an error message spans several lines: ") + what);
  if (!*what) finding("an mcc error with an empty message");
}

}  // namespace mcc::fuzz
