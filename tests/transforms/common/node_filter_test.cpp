// The node filter shared by fp16 exclude=, quantize exclude=/rules= and prune include=/exclude=/
// overrides=: name, output name and op type equality, whole-name regexes, bad regexes and
// unmatched items as usage errors naming stage, option and item, first-match rule order; and
// through the mcc binary, the same exit code and message shape in all three stages.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_mcc.h"
#include "transforms/common/node_filter.h"
#include "transforms/fold/fold_test_util.h"

using namespace mcc;
using transforms::NodeFilter;
using transforms::NodeMatcher;
using transforms::NodeRules;

namespace {

constexpr int kOpset = 13;

// X -> Conv conv1 (c1) -> Relu, unnamed (r) -> Conv conv10 (Y); a node named "a+b" (Identity).
struct Net {
  ir::Model m = test::empty_model(kOpset);
  ir::Node *conv1 = nullptr, *relu = nullptr, *conv10 = nullptr, *plus = nullptr;
  Net() {
    ir::Graph& g = *m.graph;
    ir::Value& x = test::add_input(g, "X", {1, 2, 4, 4});
    ir::Value& w1 = test::add_random_init(g, "W1", {2, 2, 1, 1}, 1);
    ir::Value& w2 = test::add_random_init(g, "W2", {2, 2, 1, 1}, 2);
    conv1 = &test::add_node(g, "Conv", "conv1", {&x, &w1}, {"c1"}, kOpset);
    relu = &test::add_node(g, "Relu", "", {conv1->outputs[0]}, {"r"}, kOpset);
    conv10 = &test::add_node(g, "Conv", "conv10", {relu->outputs[0], &w2}, {"Y"}, kOpset);
    plus = &test::add_node(g, "Identity", "a+b", {conv10->outputs[0]}, {"Z"}, kOpset);
    test::mark_output(g, *plus->outputs[0]);
  }
  std::vector<ir::Node*> nodes() const { return {conv1, relu, conv10, plus}; }
};

NodeMatcher matcher(const std::string& item) { return NodeMatcher(item, "test", "exclude"); }

std::string usage_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.message();
  }
  return "";
}

}  // namespace

TEST_CASE("node filter: an item matches a node name, an output name or an op type exactly") {
  Net n;
  CHECK(matcher("conv1").matches(*n.conv1));
  CHECK_FALSE(matcher("conv1").matches(*n.conv10));  // whole name, not a prefix
  CHECK(matcher("c1").matches(*n.conv1));            // output name
  CHECK(matcher("r").matches(*n.relu));              // output name of an unnamed node
  CHECK_FALSE(matcher("r").matches(*n.conv1));
  CHECK(matcher("Relu").matches(*n.relu));           // op type
  CHECK(matcher("Conv").matches(*n.conv1));
  CHECK(matcher("Conv").matches(*n.conv10));
  CHECK_FALSE(matcher("Conv").matches(*n.relu));
  CHECK(matcher("a+b").matches(*n.plus));            // exact first: as a regex "a+b" does not match "a+b"
  CHECK(transforms::node_label(*n.relu) == "r");
  CHECK(transforms::node_label(*n.conv1) == "conv1");
}

TEST_CASE("node filter: otherwise an item is a regex over the whole node or output name, never the op type") {
  Net n;
  CHECK(matcher("conv1.*").matches(*n.conv1));
  CHECK(matcher("conv1.*").matches(*n.conv10));
  CHECK_FALSE(matcher("conv1.*").matches(*n.relu));
  CHECK(matcher("c[0-9]").matches(*n.conv1));   // regex over an output name
  CHECK(matcher("^[rY]$").matches(*n.relu));
  CHECK(matcher("^[rY]$").matches(*n.conv10));
  CHECK_FALSE(matcher("Rel.*").matches(*n.relu));  // op types are compared exactly only
  CHECK_FALSE(matcher("onv").matches(*n.conv1));   // no partial match
}

TEST_CASE("node filter: a bad regex is a usage error naming stage, option and item") {
  CHECK_THROWS_AS(NodeFilter("fp16", "exclude", {"conv1", "conv["}), UsageError);
  const std::string m = usage_message([] { NodeFilter("fp16", "exclude", {"conv["}); });
  CHECK(m.find("fp16: exclude: 'conv[' is not a valid regex") == 0);
  CHECK(m.find('\n') == std::string::npos);
  // A rule names the whole item, payload included, and the pattern.
  auto parse = [](const std::string& p, const std::string&) { return std::stoi(p); };
  const std::string r = usage_message([&] { NodeRules<int>("prune", "overrides", {"fc(:1"}, "REGEX:N", parse); });
  CHECK(r.find("prune: overrides: 'fc(:1': 'fc(' is not a valid regex") == 0);
}

TEST_CASE("node filter: every matching item records the node; items that match nothing are reported") {
  Net n;
  NodeFilter f("quantize", "exclude", {"Conv", "conv1.*", "conv9"});
  std::vector<std::string> labels;
  std::vector<const transforms::FilterItem*> first;  // what decided each node
  for (ir::Node* x : n.nodes()) {
    labels.push_back(transforms::node_label(*x));
    first.push_back(f.match(*x, labels.back()));
  }
  REQUIRE(first[0] != nullptr);
  CHECK(first[0]->text == "Conv");  // conv1: the first matching item decides
  CHECK(first[1] == nullptr);       // the unnamed Relu
  REQUIRE(first[2] != nullptr);
  CHECK(first[2]->text == "Conv");
  CHECK(first[3] == nullptr);
  std::vector<const transforms::FilterItem*> items;
  for (const auto& x : f) items.push_back(&x);
  REQUIRE(items.size() == 3);
  CHECK(items[0]->matched == std::vector<std::string>{"conv1", "conv10"});
  CHECK(items[1]->matched == std::vector<std::string>{"conv1", "conv10"});
  CHECK(items[2]->matched.empty());
  CHECK(f.find(*n.relu) == nullptr);
  CHECK_THROWS_AS(f.require_all_matched("node", labels), UsageError);
  const std::string m = usage_message([&] { f.require_all_matched("node", labels); });
  CHECK(m.find("quantize: exclude: 'conv9' matches no node (did you mean 'conv1'?)") == 0);
  CHECK(m.find(transforms::kNodeMatchHelp) != std::string::npos);
  NodeFilter all("quantize", "exclude", {"Conv"});
  for (ir::Node* x : n.nodes()) all.match(*x, transforms::node_label(*x));
  CHECK_NOTHROW(all.require_all_matched("node", labels));
}

TEST_CASE("node rules: ordered, the first match wins and alone records the node; payloads are the stage's") {
  Net n;
  auto parse = [](const std::string& p, const std::string& item) {
    if (p != "1" && p != "2") throw UsageError("test: rules: '" + item + "': bad payload");
    return std::stoi(p);
  };
  NodeRules<int> rules("test", "rules", {"conv1:1", "conv.*:2", "Relu:1", "conv9:2"}, "REGEX:N", parse);
  REQUIRE(rules.match(*n.conv1, "conv1") != nullptr);
  CHECK(rules.match(*n.conv10, "conv10")->action == 2);
  CHECK(rules.match(*n.relu, "r")->action == 1);
  CHECK(rules.match(*n.plus, "a+b") == nullptr);
  std::vector<std::vector<std::string>> matched;
  for (const auto& r : rules) matched.push_back(r.matched);
  CHECK(matched == std::vector<std::vector<std::string>>{{"conv1"}, {"conv10"}, {"r"}, {}});
  REQUIRE(rules.first_unmatched() != nullptr);
  CHECK(rules.first_unmatched()->text == "conv9:2");
  const std::string m = usage_message([&] { rules.require_all_matched("layer", [](const auto&) { return ""; }); });
  CHECK(m.find("test: rules: 'conv9:2' matches no layer;") == 0);
  // Syntax: the last ':' splits; both parts are needed; the payload parser's error propagates.
  CHECK(transforms::split_rule("a:b:c", "test", "rules", "REGEX:N") == std::pair<std::string, std::string>{"a:b", "c"});
  for (const char* bad : {"conv1", ":1", "conv1:"})
    CHECK_THROWS_AS(NodeRules<int>("test", "rules", {bad}, "REGEX:N", parse), UsageError);
  CHECK(usage_message([&] { NodeRules<int>("test", "rules", {"conv1:3"}, "REGEX:N", parse); }) ==
        "test: rules: 'conv1:3': bad payload");
}

TEST_CASE("node filter through mcc: fp16, quantize and prune refuse a bad regex and an unmatched item alike") {
  test::TempDir tmp("mcc-node-filter");
  const std::string model = (test::source_dir() / "golden/mnist/model.onnx").string();
  const std::string calib = (test::source_dir() / "golden/mnist").string();
  const std::string out = (tmp.path / "out.onnx").string();
  struct Case {
    std::string stage, option, spec_prefix;
  };
  const std::vector<Case> cases{{"fp16", "exclude", "fp16{"},
                                {"quantize", "exclude", "quantize{calib=" + calib + " "},
                                {"quantize", "rules", "quantize{calib=" + calib + " "},
                                {"prune", "include", "prune{"},
                                {"prune", "exclude", "prune{"},
                                {"prune", "overrides", "prune{"}};
  for (const Case& c : cases) {
    const bool rule = c.option == "rules" || c.option == "overrides";
    const std::string payload = c.option == "rules" ? ":skip" : c.option == "overrides" ? ":0.2" : "";
    const std::string bad = "Conv[" + payload, nothing = "NoSuchNode" + payload;
    CAPTURE(c.stage);
    CAPTURE(c.option);
    const auto r1 = test::run_mcc({"convert", model, "-o", out, "-q", "-p", c.spec_prefix + c.option + "=" + bad + "}"});
    CHECK(r1.code == 2);
    CHECK(test::one_error_line(r1.err));
    CHECK(r1.err.find(c.stage + ": " + c.option + ": '" + bad + "'" + (rule ? ": 'Conv['" : "") +
                      " is not a valid regex") != std::string::npos);
    const auto r2 = test::run_mcc({"convert", model, "-o", out, "-q", "-p", c.spec_prefix + c.option + "=" + nothing + "}"});
    CHECK(r2.code == 2);
    CHECK(test::one_error_line(r2.err));
    CHECK(r2.err.find(c.stage + ": " + c.option + ": '" + nothing + "' matches no ") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
  }
  // An op type is an item in every stage: Conv matches both convolutions of MNIST.
  auto record_of = [&](const std::string& spec) {
    const auto r = test::run_mcc({"convert", model, "-o", out, "-q", "-p", spec});
    INFO(spec << ": " << r.err);
    CHECK(r.code == 0);
    return nlohmann::json::parse(test::slurp(tmp.path / "out.mcc.json"))["stages"][0]["record"];
  };
  const nlohmann::json convs{"Convolution28", "Convolution110"};
  CHECK(record_of("fp16{exclude=Conv}")["exclude_matches"]["Conv"] == 2);
  CHECK(record_of("prune{exclude=Conv}")["exclude"][0]["matched"] == convs);
  CHECK(record_of("quantize{calib=" + calib + " exclude=Conv}")["exclude"][0]["matched"] == convs);
}
