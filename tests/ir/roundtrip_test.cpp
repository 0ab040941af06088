// Round-trip suite: every model of the ONNX test corpora goes load → save and must equal the
// original ModelProto (MessageDifferencer, after the normalisations documented in
// ir/onnx_export.cpp), and save → load → save must be byte-identical. Through the CLI as well:
// every model ONNX Runtime runs must still run to the same outputs after `mcc convert`
// (tests/ir/roundtrip_ort_check.py), and every optional field absent in the input stays absent
// (tests/cli/optional_fields_test.cpp).
#include <doctest/doctest.h>
#include <google/protobuf/util/message_differencer.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <filesystem>

#include "ir/onnx_io.h"
#include "ir/verifier.h"
#include "support/files.h"
#include "support/paths.h"

namespace fs = std::filesystem;
using namespace mcc;

namespace {

/// Normalisation 1 of onnx_export.cpp: typed data fields become little-endian raw_data.
void typed_to_raw(onnx::TensorProto& t) {
  using TP = onnx::TensorProto;
  if (t.data_location() == TP::EXTERNAL || t.data_type() == TP::STRING) return;
  std::string raw;
  auto put = [&](auto v, size_t width) { raw.append(reinterpret_cast<const char*>(&v), width); };
  size_t width = 0;
  switch (t.data_type()) {
    case TP::FLOAT: case TP::COMPLEX64:
      for (float v : t.float_data()) put(v, 4);
      t.clear_float_data();
      break;
    case TP::DOUBLE: case TP::COMPLEX128:
      for (double v : t.double_data()) put(v, 8);
      t.clear_double_data();
      break;
    case TP::INT64:
      for (int64_t v : t.int64_data()) put(v, 8);
      t.clear_int64_data();
      break;
    case TP::UINT32: case TP::UINT64:
      width = t.data_type() == TP::UINT32 ? 4 : 8;
      for (uint64_t v : t.uint64_data()) put(v, width);
      t.clear_uint64_data();
      break;
    case TP::INT32: width = 4; [[fallthrough]];
    case TP::INT16: case TP::UINT16: case TP::FLOAT16: case TP::BFLOAT16:
      if (!width) width = 2;
      [[fallthrough]];
    default:
      if (t.data_type() > 23 || t.data_type() <= 0) return;  // unknown codes are kept as they are
      if (!width) width = 1;
      for (int32_t v : t.int32_data()) put(v, width);
      t.clear_int32_data();
      break;
  }
  if (!raw.empty()) t.set_raw_data(raw);
}

void normalize_graph(onnx::GraphProto& g);
void normalize_attr(onnx::AttributeProto& a) {
  if (a.has_t()) typed_to_raw(*a.mutable_t());
  for (auto& t : *a.mutable_tensors()) typed_to_raw(t);
  if (a.has_g()) normalize_graph(*a.mutable_g());
  for (auto& g : *a.mutable_graphs()) normalize_graph(g);
}
void normalize_graph(onnx::GraphProto& g) {
  for (auto& t : *g.mutable_initializer()) typed_to_raw(t);
  for (auto& n : *g.mutable_node())
    for (auto& a : *n.mutable_attribute()) normalize_attr(a);
}

struct CorpusResult {
  int compared = 0, failed = 0, unstable = 0;
  std::vector<std::string> failures;
};

/// load → save → compare for one model; failures are recorded with the differencer's report.
void roundtrip_one(const fs::path& model, const fs::path& tmp, CorpusResult& r) {
  ++r.compared;
  auto fail = [&](const std::string& why) {
    ++r.failed;
    if (r.failures.size() < 8) r.failures.push_back(model.string() + ": " + why.substr(0, 600));
  };
  onnx::ModelProto orig;
  if (!orig.ParseFromString(test::slurp(model))) return fail("the original does not parse");
  try {
    const ir::Model m = ir::load_model(model.string());
    ir::verify(m);  // every imported model satisfies the IR invariants
    const fs::path out1 = tmp / "a.onnx";
    ir::save_model(m, out1.string());
    const std::string bytes1 = test::slurp(out1);
    onnx::ModelProto saved;
    if (!saved.ParseFromString(bytes1)) return fail("the saved model does not parse");
    normalize_graph(*orig.mutable_graph());
    normalize_graph(*saved.mutable_graph());
    google::protobuf::util::MessageDifferencer diff;
    std::string report;
    diff.ReportDifferencesToString(&report);
    if (!diff.Compare(orig, saved)) return fail(report);
    const ir::Model m2 = ir::load_model(out1.string());
    if (ir::serialize_model(m2) != bytes1) {
      ++r.unstable;
      return fail("save → load → save is not byte-identical");
    }
  } catch (const std::exception& e) {
    fail(std::string("threw: ") + e.what());
  }
}

CorpusResult roundtrip_corpus(const fs::path& root) {
  CorpusResult r;
  mcc::test::TempDir tmp("mcc-roundtrip");
  std::vector<fs::path> models;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().extension() == ".onnx") models.push_back(e.path());
  std::sort(models.begin(), models.end());
  for (const auto& p : models) roundtrip_one(p, tmp.path, r);
  return r;
}

void report(const char* name, const CorpusResult& r) {
  MESSAGE(std::string(name) << ": " << r.compared << " models compared, " << r.failed << " failed ("
               << r.unstable << " not byte-stable)");
  for (const auto& f : r.failures) MESSAGE("  " << f);
}

/// True (and a loud note on stderr) when a ../shared corpus is absent: the case is skipped, never
/// silently passed.
bool shared_missing(const char* sub) {
  const fs::path p = mcc::test::shared_dir() / sub;
  if (fs::is_directory(p)) return false;
  std::fprintf(stderr, "\n*** roundtrip: %s is ABSENT; its round-trip case is SKIPPED ***\n\n", p.c_str());
  return true;
}

}  // namespace

TEST_SUITE("roundtrip") {

TEST_CASE("Debian ONNX backend test models load and save losslessly") {
  const CorpusResult r = roundtrip_corpus(mcc::test::onnx_testdata_dir());
  report("libonnx-testdata", r);
  CHECK(r.compared > 1000);
  CHECK(r.failed == 0);
}

TEST_CASE("newer ONNX node test models load and save losslessly" * doctest::skip(shared_missing("onnx-node-tests"))) {
  const CorpusResult r = roundtrip_corpus(mcc::test::shared_dir() / "onnx-node-tests");
  report("onnx-node-tests", r);
  CHECK(r.compared > 0);
  CHECK(r.failed == 0);
}

TEST_CASE("shared real models load and save losslessly" * doctest::skip(shared_missing("models"))) {
  const CorpusResult r = roundtrip_corpus(mcc::test::shared_dir() / "models");
  report("shared models", r);
  CHECK(r.compared > 0);
  CHECK(r.failed == 0);
}

TEST_CASE("bundled golden models load and save losslessly") {
  const CorpusResult r = roundtrip_corpus(mcc::test::source_dir() / "golden");
  report("golden", r);
  CHECK(r.compared >= 3);
  CHECK(r.failed == 0);
}

TEST_CASE("models ONNX Runtime runs still run, to the same outputs, after mcc convert") {
  // tests/ir/roundtrip_ort_check.py: every corpus model through the CLI with no pipeline.
  if (std::system("python3 -c 'import onnx, onnxruntime, numpy' > /dev/null 2>&1") != 0) {
    MESSAGE("python3 with onnx, onnxruntime and numpy is NOT available: the ONNX Runtime round trip is NOT checked");
    WARN_MESSAGE(false, "ONNX Runtime round trip SKIPPED (scripts/setup.sh installs the python packages)");
    return;
  }
  mcc::test::TempDir tmp("mcc-roundtrip-ort");
  const fs::path log = tmp.path / "log.txt";
  std::string cmd = "python3 '" + (mcc::test::source_dir() / "tests/ir/roundtrip_ort_check.py").string() +
                    "' --mcc '" + mcc::test::mcc_binary().string() + "'";
  for (const fs::path& d : {mcc::test::onnx_testdata_dir(), mcc::test::shared_dir() / "onnx-node-tests",
                            mcc::test::shared_dir() / "models", mcc::test::source_dir() / "golden"})
    cmd += " '" + d.string() + "'";
  const int rc = std::system((cmd + " > '" + log.string() + "' 2>&1").c_str());
  const std::string out = test::slurp(log);
  MESSAGE(out.substr(out.size() > 8000 ? out.size() - 8000 : 0));
  std::smatch counts;
  REQUIRE(std::regex_search(out, counts, std::regex(R"((\d+) passed, (\d+) failed)")));
  CHECK(std::stoi(counts[1]) > 1000);
  CHECK(counts[2] == "0");
  CHECK(rc == 0);
}

TEST_CASE("ONNX test-data tensor files load and save losslessly") {
  int compared = 0, failed = 0, unsupported = 0;
  std::vector<std::string> failures;
  mcc::test::TempDir tmp("mcc-roundtrip-pb");
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(mcc::test::onnx_testdata_dir()))
    if (e.is_regular_file() && e.path().extension() == ".pb") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    try {
      const ir::Tensor t = ir::load_tensor_pb(p.string());
      ++compared;
      ir::save_tensor_pb(t, (tmp.path / "t.pb").string());
      onnx::TensorProto a, b;
      a.ParseFromString(test::slurp(p));
      b.ParseFromString(test::slurp(tmp.path / "t.pb"));
      typed_to_raw(a);
      if (!google::protobuf::util::MessageDifferencer::Equals(a, b)) {
        ++failed;
        if (failures.size() < 8) failures.push_back(p.string());
      }
    } catch (const UnsupportedError&) {
      ++unsupported;  // sequence / optional / map test data
    } catch (const std::exception& e) {
      ++failed;
      if (failures.size() < 8) failures.push_back(p.string() + ": " + e.what());
    }
  }
  MESSAGE("tensor files: " << compared << " compared, " << failed << " failed, " << unsupported
                           << " sequence/optional/map files refused (UnsupportedError)");
  for (const auto& f : failures) MESSAGE("  " << f);
  CHECK(compared > 1000);
  CHECK(failed == 0);
}

}  // TEST_SUITE
