// End-to-end tests of the real `mcc` binary: exit codes for every failure class inspect and convert
// can raise, one-line errors on stderr, no output or temp file left behind on failure, the input
// never modified, and the success paths (inspect --json fields, convert + sidecar sha256, replay).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/sha256.h"
#include "ir/graph.h"
#include "ir/onnx_io.h"
#include "support/paths.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using mcc::test::one_error_line;
using mcc::test::run_mcc;
using mcc::test::RunResult;
using mcc::test::slurp;
using mcc::test::spit;

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

fs::path mnist() { return mcc::test::source_dir() / "golden/mnist/model.onnx"; }

/// X f32[256] + W f32[256] -> Y, saved with W in an external data file "<name>.data".
void write_external_model(const fs::path& path) {
  mcc::ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.producer_name = "mcc-test";
  m.graph = std::make_unique<mcc::ir::Graph>();
  auto& g = *m.graph;
  g.name = "ext";
  auto& x = g.add_value("X");
  x.dtype = mcc::ir::DType::F32;
  x.shape = mcc::ir::Shape::of({256});
  x.has_type = true;
  g.inputs.push_back(&x);
  std::vector<float> w(256);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.5f;
  auto& wv = g.add_initializer("W", mcc::ir::Tensor::from_vector<float>({256}, w));
  auto& add = g.add_node("Add", "", "add", {&x, &wv}, {"Y"});
  add.since_version = 14;
  add.outputs[0]->dtype = mcc::ir::DType::F32;
  add.outputs[0]->shape = mcc::ir::Shape::of({256});
  add.outputs[0]->has_type = true;
  g.outputs.push_back(add.outputs[0]);
  mcc::ir::SaveOptions opts;
  opts.force_external = true;
  mcc::ir::save_model(m, path.string(), opts);
}

struct BadInput {
  const char* label;
  std::string file;  // name inside the scratch folder ("" for a path that does not exist)
};

}  // namespace

TEST_CASE("cli: the mcc binary was built") {
  REQUIRE_MESSAGE(fs::exists(mcc::test::mcc_binary()), "mcc binary missing: " << mcc::test::mcc_binary());
  CHECK(fs::exists(mnist()));
}

TEST_CASE("cli: -h lists the commands and the exit-code table") {
  const RunResult r = run_mcc({"-h"});
  CHECK(r.code == 0);
  CHECK(r.out.find("inspect") != std::string::npos);
  CHECK(r.out.find("convert") != std::string::npos);
  CHECK(r.out.find("Exit codes") != std::string::npos);
  CHECK(r.out.find("70") != std::string::npos);
}

TEST_CASE("cli: usage errors exit 2 with one line") {
  const RunResult bad_flag = run_mcc({"inspect", mnist().string(), "--no-such-flag"});
  CHECK(bad_flag.code == 2);
  CHECK(one_error_line(bad_flag.err));
  const RunResult no_command = run_mcc({});
  CHECK(no_command.code == 2);
  CHECK(one_error_line(no_command.err));
  const RunResult missing_output = run_mcc({"convert", mnist().string()});
  CHECK(missing_output.code == 2);
  CHECK(one_error_line(missing_output.err));
}

TEST_CASE("cli: inspect prints a summary, --json parses with every field, --dump prints the IR") {
  const RunResult text = run_mcc({"inspect", mnist().string()});
  CHECK(text.code == 0);
  CHECK(text.out.find("Input3: f32[1,1,28,28]") != std::string::npos);
  CHECK(text.out.find("Conv") != std::string::npos);

  const RunResult r = run_mcc({"inspect", mnist().string(), "--json"});
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  for (const char* key : {"path", "file_bytes", "ir_version", "producer", "opsets", "inputs", "outputs", "nodes",
                          "ops", "parameters", "constants", "sparsity", "quantized", "external_data", "subgraphs",
                          "metadata"})
    CHECK_MESSAGE(j.contains(key), key);
  CHECK(j["ir_version"] == 3);
  CHECK(j["opsets"][0]["version"] == 8);
  REQUIRE(j["inputs"].size() == 1);
  CHECK(j["inputs"][0]["name"] == "Input3");
  CHECK(j["inputs"][0]["dtype"] == "f32");
  CHECK(j["inputs"][0]["shape"] == json::array({1, 1, 28, 28}));
  CHECK(j["outputs"][0]["shape"] == json::array({1, 10}));
  int64_t convs = 0;
  for (const auto& o : j["ops"]) if (o["op"] == "Conv") convs = o["count"].get<int64_t>();
  CHECK(convs == 2);
  CHECK(j["parameters"]["by_dtype"][0]["dtype"] == "f32");
  CHECK(j["parameters"]["elements"].get<int64_t>() > 5000);
  CHECK(j["sparsity"]["fraction"].get<double>() >= 0.0);
  CHECK(j["quantized"]["QuantizeLinear"] == 0);
  CHECK(j["external_data"]["tensors"] == 0);
  CHECK(j["subgraphs"]["count"] == 0);

  const RunResult dump = run_mcc({"inspect", mnist().string(), "--dump"});
  CHECK(dump.code == 0);
  CHECK(dump.out.rfind("model ir_version=3 opsets=[\"\":8]", 0) == 0);
  CHECK(dump.out.find(" = Conv@") != std::string::npos);
}

TEST_CASE("cli: convert round-trips, writes the sidecar with the output's sha256, leaves the input alone") {
  mcc::test::TempDir tmp("mcc-cli-convert");
  const fs::path in = tmp.path / "in.onnx";
  fs::copy_file(mnist(), in);
  const std::string original = slurp(in);
  fs::create_directory(tmp.path / "out");
  const fs::path out = tmp.path / "out/model.onnx";

  const RunResult r = run_mcc({"convert", in.string(), "-o", out.string(), "--json"});
  REQUIRE(r.code == 0);
  CHECK(listing(tmp.path / "out") == std::set<std::string>{"model.onnx", "model.mcc.json"});
  CHECK(slurp(in) == original);
  const json state = json::parse(slurp(tmp.path / "out/model.mcc.json"));
  CHECK(state["schema_version"] == 1);
  CHECK(state["tool"]["name"] == "mcc");
  CHECK(state["input"]["path"] == in.string());
  CHECK(state["input"]["size"] == original.size());
  CHECK(state["input"]["sha256"] == mcc::io::sha256_hex(original));
  CHECK(state["output"]["path"] == out.string());
  CHECK(state["output"]["sha256"] == mcc::io::sha256_file_hex(out.string()));
  CHECK(state["pipeline"] == "");
  CHECK(state["stages"] == json::array());
  CHECK(json::parse(r.out)["output"]["sha256"] == state["output"]["sha256"]);

  // The output holds the same model: the same IR text.
  const RunResult a = run_mcc({"inspect", in.string(), "--dump"});
  const RunResult b = run_mcc({"inspect", out.string(), "--dump"});
  CHECK(a.code == 0);
  CHECK(b.code == 0);
  CHECK(a.out == b.out);

  SUBCASE("--sidecar writes the state where asked") {
    const fs::path side = tmp.path / "custom-state.json";
    const RunResult s = run_mcc({"convert", in.string(), "-o", (tmp.path / "out/b.onnx").string(), "--sidecar",
                                 side.string()});
    CHECK(s.code == 0);
    CHECK(fs::exists(side));
    CHECK_FALSE(fs::exists(tmp.path / "out/b.mcc.json"));
  }
  SUBCASE("--state replays the same conversion byte for byte") {
    const fs::path again = tmp.path / "out/again.onnx";
    const RunResult s = run_mcc({"convert", in.string(), "-o", again.string(), "--state",
                                 (tmp.path / "out/model.mcc.json").string()});
    CHECK(s.code == 0);
    CHECK(slurp(again) == slurp(out));
  }
  SUBCASE("--state for another model, a newer schema or a corrupt file is exit 3") {
    json other = state;
    other["input"]["sha256"] = std::string(64, '0');
    spit(tmp.path / "other.json", other.dump());
    json newer = state;
    newer["schema_version"] = 99;
    spit(tmp.path / "newer.json", newer.dump());
    spit(tmp.path / "corrupt.json", "{\"schema_version\": 1, ");
    for (const char* name : {"other.json", "newer.json", "corrupt.json"}) {
      const RunResult s = run_mcc({"convert", in.string(), "-o", (tmp.path / "out/c.onnx").string(), "--state",
                                   (tmp.path / name).string()});
      CHECK_MESSAGE(s.code == 3, name);
      CHECK_MESSAGE(one_error_line(s.err), s.err);
      CHECK_FALSE(fs::exists(tmp.path / "out/c.onnx"));
    }
  }
}

TEST_CASE("cli: convert onto its own input refuses and leaves the input byte for byte") {
  mcc::test::TempDir tmp("mcc-cli-self");
  const fs::path in = tmp.path / "m.onnx";
  fs::copy_file(mnist(), in);
  const std::string original = slurp(in);
  const RunResult r = run_mcc({"convert", in.string(), "-o", in.string()});
  CHECK(r.code == 2);
  CHECK(one_error_line(r.err));
  CHECK(slurp(in) == original);
  CHECK(listing(tmp.path) == std::set<std::string>{"m.onnx"});
}

TEST_CASE("cli: bad inputs exit 3 with one line and leave no output or temp file") {
  mcc::test::TempDir tmp("mcc-cli-bad");
  const std::string good = slurp(mnist());
  spit(tmp.path / "truncated.onnx", good.substr(0, good.size() / 2));
  std::mt19937 rng(1234);
  std::string noise(4096, '\0');
  for (auto& c : noise) c = static_cast<char>(rng() & 0xff);
  spit(tmp.path / "random.onnx", noise);
  spit(tmp.path / "empty.onnx", "");
  write_external_model(tmp.path / "ext.onnx");
  REQUIRE(fs::exists(tmp.path / "ext.onnx.data"));
  fs::remove(tmp.path / "ext.onnx.data");
  fs::create_directory(tmp.path / "out");

  const std::vector<BadInput> cases = {{"truncated", "truncated.onnx"},
                                       {"random bytes", "random.onnx"},
                                       {"empty file", "empty.onnx"},
                                       {"nonexistent path", "does-not-exist.onnx"},
                                       {"missing external data", "ext.onnx"}};
  const auto inputs_before = listing(tmp.path);
  for (const auto& c : cases) {
    CAPTURE(c.label);
    const fs::path in = tmp.path / c.file;
    const RunResult conv = run_mcc({"convert", in.string(), "-o", (tmp.path / "out/x.onnx").string()});
    CHECK(conv.code == 3);
    CHECK_MESSAGE(one_error_line(conv.err), conv.err);
    CHECK(conv.err.find(c.file) != std::string::npos);  // names the file
    CHECK(listing(tmp.path / "out").empty());
    CHECK(listing(tmp.path) == inputs_before);
    const RunResult insp = run_mcc({"inspect", in.string()});
    CHECK(insp.code == 3);
    CHECK_MESSAGE(one_error_line(insp.err), insp.err);
  }
}

TEST_CASE("cli: an external-data model converts and keeps its data external") {
  mcc::test::TempDir tmp("mcc-cli-ext");
  write_external_model(tmp.path / "ext.onnx");
  const std::string model_bytes = slurp(tmp.path / "ext.onnx");
  const std::string data_bytes = slurp(tmp.path / "ext.onnx.data");
  const RunResult r = run_mcc({"convert", (tmp.path / "ext.onnx").string(), "-o", (tmp.path / "copy.onnx").string()});
  CHECK(r.code == 0);
  CHECK(slurp(tmp.path / "ext.onnx") == model_bytes);
  CHECK(slurp(tmp.path / "ext.onnx.data") == data_bytes);
  CHECK(fs::exists(tmp.path / "copy.onnx.data"));
  const RunResult insp = run_mcc({"inspect", (tmp.path / "copy.onnx").string(), "--json"});
  REQUIRE(insp.code == 0);
  CHECK(json::parse(insp.out)["external_data"]["tensors"] == 1);
}

TEST_CASE("cli: unwritable output locations exit 2 and create nothing") {
  mcc::test::TempDir tmp("mcc-cli-unwritable");
  const fs::path in = tmp.path / "m.onnx";
  fs::copy_file(mnist(), in);
  spit(tmp.path / "plainfile", "x");
  const auto before = listing(tmp.path);
  // A folder that is a regular file stops writes even for root; a missing folder too.
  for (const fs::path& out : {tmp.path / "plainfile/x.onnx", tmp.path / "missing-dir/x.onnx"}) {
    CAPTURE(out.string());
    const RunResult r = run_mcc({"convert", in.string(), "-o", out.string()});
    CHECK(r.code == 2);
    CHECK(one_error_line(r.err));
    CHECK(listing(tmp.path) == before);
  }
  // A read-only folder stops writes for ordinary users only; root bypasses permissions.
  fs::create_directory(tmp.path / "ro");
  fs::permissions(tmp.path / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  const RunResult r = run_mcc({"convert", in.string(), "-o", (tmp.path / "ro/x.onnx").string()});
  const bool root = ::geteuid() == 0;
  CHECK(r.code == (root ? 0 : 2));
  fs::permissions(tmp.path / "ro", fs::perms::owner_all);
  CHECK(listing(tmp.path / "ro").size() == (root ? 2u : 0u));
}

TEST_CASE("cli: an unknown pipeline stage is a usage error before any work") {
  mcc::test::TempDir tmp("mcc-cli-spec");
  const RunResult r = run_mcc({"convert", mnist().string(), "-o", (tmp.path / "o.onnx").string(), "-p", "fold-bn"});
  CHECK(r.code == 2);
  CHECK(one_error_line(r.err));
  CHECK(r.err.find("unknown stage 'fold-bn' (did you mean 'fold'?)") != std::string::npos);
  CHECK(listing(tmp.path).empty());
}
