// Models whose names are not UTF-8 or hold control characters (legal bytes in an ONNX file): the
// CLI keeps the names byte-exact in the ONNX output, writes valid JSON states that replay them
// byte-identically, and never echoes raw bytes to the terminal.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/onnx_io.h"
#include "support/graph_builder.h"
#include "support/run_mcc.h"

namespace fs = std::filesystem;
using namespace mcc;

namespace {

const std::string kNode = "m\xff\x1b[31m";  // not UTF-8, and an ESC sequence
const std::string kWeight = "w\xfe\x01";
const std::string kOutput = "y\xc3";         // a lead byte without its continuation

/// x[1,4] -> MatMul(kNode, weight kWeight) -> Relu -> kOutput; `op` replaces Relu.
fs::path write_model(const fs::path& dir, const std::string& op = "Relu", const std::string& act_name = "act\\x41") {
  ir::Model m = test::empty_model(13);
  ir::Graph& g = *m.graph;
  ir::Value& x = test::add_input(g, "x", {1, 4});
  ir::Value& w = test::add_random_init(g, kWeight, {4, 4}, 3);
  ir::Node& mm = test::add_node(g, "MatMul", kNode, {&x, &w}, {"h"}, 13);
  ir::Node& act = test::add_node(g, op, act_name, {mm.outputs[0]}, {kOutput}, 13);
  test::mark_output(g, *act.outputs[0]);
  const fs::path p = dir / "names.onnx";
  ir::save_model(m, p.string());
  return p;
}

bool has_raw_bytes(const std::string& text) {
  return text.find('\xff') != std::string::npos || text.find('\x1b') != std::string::npos ||
         text.find('\xfe') != std::string::npos;
}

}  // namespace

TEST_CASE("convert and replay keep non-UTF-8 names byte-exact and write a valid JSON state") {
  test::TempDir dir("mcc-names");
  const fs::path in = write_model(dir.path);
  const fs::path out = dir.path / "out.onnx", again = dir.path / "again.onnx";
  const auto r = test::run_mcc({"convert", in.string(), "-o", out.string(), "-p", "fold,fp16"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK_FALSE(has_raw_bytes(r.out + r.err));

  const std::string state_text = test::slurp(dir.path / "out.mcc.json");
  nlohmann::ordered_json state;
  REQUIRE_NOTHROW(state = nlohmann::ordered_json::parse(state_text));  // parsing requires UTF-8
  CHECK(state.contains("string_escapes"));
  CHECK(state_text.find("m\\\\xff") != std::string::npos);

  const ir::Model m = ir::load_model(out.string());
  bool found = false;
  for (const ir::Node* n : m.graph->nodes()) found = found || n->name == kNode;
  CHECK(found);
  CHECK(m.graph->outputs.at(0)->name == kOutput);

  const auto replay = test::run_mcc({"convert", in.string(), "-o", again.string(), "--state",
                                     (dir.path / "out.mcc.json").string()});
  REQUIRE_MESSAGE(replay.code == 0, replay.err);
  CHECK(test::slurp(again) == test::slurp(out));
  CHECK(test::slurp(dir.path / "again.mcc.json").find("string_escapes") != std::string::npos);
}

TEST_CASE("inspect prints escaped names as text and as JSON") {
  test::TempDir dir("mcc-names");
  const fs::path in = write_model(dir.path);
  const auto text = test::run_mcc({"inspect", in.string()});
  REQUIRE(text.code == 0);
  CHECK_FALSE(has_raw_bytes(text.out));
  CHECK(text.out.find("m\\xff\\x1b[31m") != std::string::npos);
  const auto json = test::run_mcc({"inspect", in.string(), "--json"});
  REQUIRE(json.code == 0);
  CHECK_NOTHROW((void)nlohmann::ordered_json::parse(json.out));
  const auto dump = test::run_mcc({"inspect", in.string(), "--dump"});
  REQUIRE(dump.code == 0);
  CHECK_FALSE(has_raw_bytes(dump.out));
}

TEST_CASE("errors naming a non-UTF-8 node print one escaped line") {
  test::TempDir dir("mcc-names");
  const fs::path in = write_model(dir.path, "NoSuchOp", "act\n\xff line two");
  const auto r = test::run_mcc({"eval", in.string(), "--random", "1"});
  CHECK(r.code == 4);
  CHECK(test::one_error_line(r.err));
  CHECK_FALSE(has_raw_bytes(r.err));
  CHECK(r.err.find("act\\x0a\\xff line two") != std::string::npos);
}

TEST_CASE("a state marked string_escapes with a malformed escape is refused as invalid input") {
  test::TempDir dir("mcc-names");
  const fs::path in = write_model(dir.path);
  const fs::path out = dir.path / "out.onnx";
  REQUIRE(test::run_mcc({"convert", in.string(), "-o", out.string(), "-p", "fold,fp16"}).code == 0);
  std::string state = test::slurp(dir.path / "out.mcc.json");
  const auto at = state.find("m\\\\xff");
  REQUIRE(at != std::string::npos);
  state.replace(at, 6, "m\\\\qq");
  test::spit(dir.path / "bad.mcc.json", state);
  const auto r = test::run_mcc({"convert", in.string(), "-o", (dir.path / "again.onnx").string(), "--state",
                                (dir.path / "bad.mcc.json").string()});
  CHECK(r.code == 3);
  CHECK(test::one_error_line(r.err));
  CHECK(r.err.find("bad.mcc.json") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path / "again.onnx"));
}
