// Inputs the fuzz targets (fuzz/) found, kept under tests/data/fuzz_regressions/<target>/ and
// replayed the way the target ran them: each must give an mcc error on one line (or load), never
// a crash or another exception. Plus hand-made hostile .npy headers (sizes, digits, newlines).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ir/errors.h"
#include "ir/npy.h"
#include "ir/onnx_io.h"
#include "ir/verifier.h"
#include "support/files.h"
#include "support/paths.h"

namespace fs = std::filesystem;
using namespace mcc;

namespace {

std::vector<fs::path> regressions(const std::string& target) {
  std::vector<fs::path> out;
  const fs::path dir = test::source_dir() / "tests" / "data" / "fuzz_regressions" / target;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// "ok", the error text of an mcc error, or "NOT AN MCC ERROR: ...".
std::string outcome(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("NOT AN MCC ERROR: ") + e.what();
  }
  return "ok";
}

std::string npy_header(const std::string& dict) {
  std::string h = dict;
  h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size() & 0xff) +
         static_cast<char>(h.size() >> 8) + h;
}

}  // namespace

TEST_CASE("fuzz regressions: .npy inputs give one-line mcc errors") {
  const auto files = regressions("npy");
  REQUIRE(!files.empty());
  for (const auto& f : files) {
    CAPTURE(f);
    const auto r = outcome([&] { (void)ir::load_npy(f.string()); });
    CHECK(r.find("NOT AN MCC ERROR") == std::string::npos);
    CHECK(r.find('\n') == std::string::npos);
  }
}

TEST_CASE("fuzz regressions: model inputs load or give mcc errors") {
  const auto files = regressions("onnx_model");
  REQUIRE(!files.empty());
  for (const auto& f : files) {
    CAPTURE(f);
    const auto r = outcome([&] {
      ir::Model m = ir::load_model_from_bytes(test::slurp(f), f.parent_path().string());
      ir::verify(m);
      (void)ir::serialize_model(m);
    });
    CHECK(r.find("NOT AN MCC ERROR") == std::string::npos);
  }
}

TEST_CASE("hostile .npy headers are refused before allocating") {
  test::TempDir dir("mcc-hostile-npy");
  auto load = [&](const std::string& dict, const std::string& data) {
    const fs::path p = dir.path / "x.npy";
    test::spit(p, npy_header(dict) + data);
    return outcome([&] { (void)ir::load_npy(p.string()); });
  };
  CHECK(load("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0')) == "ok");
  // 2^40 floats claimed, 8 bytes held: refused without allocating 4 TiB.
  CHECK(load("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", std::string(8, '\0'))
            .find("the shape claims 4398046511104 bytes, the file holds 8") != std::string::npos);
  // More digits than int64 holds: an mcc error, not std::out_of_range.
  CHECK(load("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "")
            .find("bad .npy shape") != std::string::npos);
  CHECK(load("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", "")
            .find("overflows int64") != std::string::npos);
  CHECK(load("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }", "")
            .find("would exceed 2^63 bytes") != std::string::npos);
  const auto multi = load("{'descr': '<f4', 'fortran_order': False, 'shape': (1,\n\x01), }", "");
  CHECK(multi.find("bad .npy shape '(1,\\x0a\\x01)'") != std::string::npos);
  CHECK(multi.find('\n') == std::string::npos);
}
