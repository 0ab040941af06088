// ONNX backend node tests against a manifest of expected passes (tract style).
//
// Manifest lines (tests/onnx_node/manifest*.txt):
//   node/test_abs                       expected to pass
//   node/test_foo   atol=1e-5 rtol=1e-4 expected to pass with looser tolerances (say why in a comment)
//   -node/test_bar  # reason            known failure, with the reason
//   node/test_abs  backends=cpu,cuda    the backend column: also expected to pass on cuda with at
//                                       least one node placed there (# cuda: reason when it fails)
// Every case runs on the cpu and then on each other available backend (the cuda backend runs
// emulated on the host in the test build); a backend that takes no node of a case is not counted.
// An expected pass that fails fails the suite; a case that passes but is not listed is reported
// so it can be added ("the count only grows"). Environment:
//   MCC_NODE_FILTER=<regex>        run only matching cases (suite/case names)
//   MCC_NODE_VERBOSE=1             print every case's result
//   MCC_NODE_WRITE_MANIFEST=<file> write a manifest of the current results (passes + reasons)
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "backends/backend_registry.h"

#include "onnx_node/node_runner.h"
#include "support/paths.h"

namespace fs = std::filesystem;

namespace {

struct ManifestEntry {
  bool expect_pass = true;
  double atol = 1e-7, rtol = 1e-3;
  std::set<std::string> backends{"cpu"};  // where it is expected to pass
  std::string reason;
};

std::map<std::string, ManifestEntry> read_manifest(const fs::path& p) {
  std::map<std::string, ManifestEntry> m;
  std::ifstream f(p);
  std::string line;
  while (std::getline(f, line)) {
    std::string comment;
    if (auto h = line.find('#'); h != std::string::npos) { comment = line.substr(h + 1); line = line.substr(0, h); }
    std::istringstream ss(line);
    std::string name;
    if (!(ss >> name)) continue;
    ManifestEntry e;
    if (name[0] == '-') { e.expect_pass = false; name = name.substr(1); e.reason = comment; }
    std::string opt;
    while (ss >> opt) {
      if (opt.rfind("atol=", 0) == 0) e.atol = std::stod(opt.substr(5));
      if (opt.rfind("rtol=", 0) == 0) e.rtol = std::stod(opt.substr(5));
      if (opt.rfind("backends=", 0) == 0) {
        e.backends.clear();
        std::stringstream bs(opt.substr(9));
        for (std::string b; std::getline(bs, b, ',');) e.backends.insert(b);
      }
    }
    m[name] = e;
  }
  return m;
}

struct SuiteCounts {
  int total = 0, passed = 0, expected = 0, regressions = 0, unlisted_passes = 0;
  std::map<std::string, int> backend_passes, backend_ran;  // other backends: passes, cases with a node on them
};

// One case on the backends other than the cpu: names of those where it passed with a node placed
// there, and the failure reasons of those where it ran and failed.
struct OtherBackends {
  std::set<std::string> passed;
  std::map<std::string, std::string> failed;
};
OtherBackends run_other_backends(const fs::path& cdir, const mcc::test::NodeCaseOptions& base, SuiteCounts& c) {
  OtherBackends o;
  for (const mcc::backends::Backend* b : mcc::backends::available_backends()) {
    if (b->name() == "cpu") continue;
    mcc::test::NodeCaseOptions opts = base;
    opts.backend = std::string(b->name());
    const auto r = mcc::test::run_node_case(cdir.string(), opts);
    if (r.passed && r.nodes_on_backend == 0) continue;  // nothing ran there
    ++c.backend_ran[opts.backend];
    if (r.passed) {
      o.passed.insert(opts.backend);
      ++c.backend_passes[opts.backend];
    } else {
      o.failed[opts.backend] = r.reason;
    }
  }
  return o;
}

SuiteCounts run_suite(const fs::path& root, const std::vector<std::string>& groups, const fs::path& manifest_path,
                      const std::string& label) {
  const auto manifest = read_manifest(manifest_path);
  const char* filter_env = std::getenv("MCC_NODE_FILTER");
  const bool verbose = std::getenv("MCC_NODE_VERBOSE") != nullptr;
  const std::regex filter(filter_env ? filter_env : ".*");
  SuiteCounts c;
  std::map<std::string, std::pair<bool, std::string>> results;
  std::map<std::string, OtherBackends> others;
  for (const auto& g : groups) {
    if (!fs::is_directory(root / g)) continue;
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(root / g))
      if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    for (const auto& cdir : cases) {
      const std::string name = g + "/" + cdir.filename().string();
      if (!std::regex_search(name, filter)) continue;
      mcc::test::NodeCaseOptions opts;
      auto it = manifest.find(name);
      if (it != manifest.end()) { opts.atol = it->second.atol; opts.rtol = it->second.rtol; }
      const auto r = mcc::test::run_node_case(cdir.string(), opts);
      results[name] = {r.passed, r.reason};
      ++c.total;
      if (r.passed) ++c.passed;
      const bool expected = it != manifest.end() && it->second.expect_pass;
      if (expected) ++c.expected;
      if (r.passed) {
        const OtherBackends& o = others[name] = run_other_backends(cdir, opts, c);
        const std::set<std::string> want = expected ? it->second.backends : std::set<std::string>{};
        for (const auto& b : want)
          if (b != "cpu" && !o.passed.count(b)) {
            ++c.regressions;
            std::fprintf(stderr, "  REGRESSION on %s %s: %s\n", b.c_str(), name.c_str(),
                         o.failed.count(b) ? o.failed.at(b).c_str() : "no node ran there any more");
          }
        for (const auto& b : o.passed)
          if (expected && !want.count(b))
            std::fprintf(stderr, "  new pass on %s (add to %s): %s\n", b.c_str(), manifest_path.filename().c_str(), name.c_str());
      }
      if (expected && !r.passed) {
        ++c.regressions;
        std::fprintf(stderr, "  REGRESSION %s: %s\n", name.c_str(), r.reason.c_str());
      } else if (r.passed && !expected) {
        ++c.unlisted_passes;
        if (verbose || it == manifest.end()) std::fprintf(stderr, "  new pass (add to %s): %s\n", manifest_path.filename().c_str(), name.c_str());
      }
      if (verbose) std::fprintf(stderr, "  %s %s%s%s\n", r.passed ? "PASS" : "FAIL", name.c_str(), r.passed ? "" : ": ", r.reason.c_str());
    }
  }
  if (const char* out = std::getenv("MCC_NODE_WRITE_MANIFEST")) {
    std::ofstream f(std::string(out) + "." + label);
    f << "# " << label << ": expected passes, then known failures with the reason (regenerate with\n"
      << "# MCC_NODE_WRITE_MANIFEST=<file> ./build/mcc_tests --test-suite=conformance).\n";
    for (const auto& [n, r] : results)
      if (r.first) {
        auto it = manifest.find(n);
        f << n;
        if (it != manifest.end() && (it->second.atol != 1e-7 || it->second.rtol != 1e-3))
          f << " atol=" << it->second.atol << " rtol=" << it->second.rtol;
        const OtherBackends& o = others[n];
        if (!o.passed.empty()) {
          f << " backends=cpu";
          for (const auto& b : o.passed) f << "," << b;
        }
        std::string why;
        for (const auto& [b, reason] : o.failed) why += (why.empty() ? "  # " : "; ") + b + ": " + reason;
        f << why << "\n";
      }
    for (const auto& [n, r] : results)
      if (!r.first) {
        auto it = manifest.find(n);
        const std::string reason = it != manifest.end() && !it->second.expect_pass && !it->second.reason.empty()
                                       ? it->second.reason.substr(it->second.reason.find_first_not_of(' '))
                                       : r.second;
        f << "-" << n << "  # " << reason << "\n";
      }
  }
  std::fprintf(stderr, "[conformance] %s: %d of %d cases pass on cpu (manifest expects %d; %d regressions, %d unlisted passes)\n",
               label.c_str(), c.passed, c.total, c.expected, c.regressions, c.unlisted_passes);
  for (const auto& [b, ran] : c.backend_ran)
    std::fprintf(stderr, "[conformance] %s: %d of the %d cases that placed a node on %s pass there\n", label.c_str(),
                 c.backend_passes[b], ran, b.c_str());
  return c;
}

const std::vector<std::string> kGroups = {"node", "simple", "pytorch-converted", "pytorch-operator"};

}  // namespace

TEST_SUITE("conformance") {
  TEST_CASE("Debian libonnx-testdata node tests pass as the manifest expects") {
    const fs::path root = mcc::test::onnx_testdata_dir();
    REQUIRE_MESSAGE(fs::is_directory(root / "node"), "ONNX test data missing at " << root << " (apt-get install libonnx-testdata)");
    const auto c = run_suite(root, kGroups, mcc::test::source_dir() / "tests/onnx_node/manifest.txt", "debian");
    MESSAGE("Debian ONNX backend tests: " << c.passed << " of " << c.total << " pass");
    CHECK(c.regressions == 0);
    CHECK(c.passed >= c.expected);
  }

  TEST_CASE("onnx 1.22 node tests (../shared/onnx-node-tests) pass as the manifest expects" *
            doctest::skip(!fs::is_directory(mcc::test::shared_dir() / "onnx-node-tests"))) {
    const fs::path root = mcc::test::shared_dir() / "onnx-node-tests";
    const auto c = run_suite(root, {"node", "simple", "pytorch-converted", "pytorch-operator", "light"},
                             mcc::test::source_dir() / "tests/onnx_node/manifest_onnx122.txt", "onnx122");
    MESSAGE("onnx 1.22 backend tests: " << c.passed << " of " << c.total << " pass");
    CHECK(c.regressions == 0);
    CHECK(c.passed >= c.expected);
  }
}
