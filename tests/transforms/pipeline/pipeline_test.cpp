// Pipeline spec parser: inline grammar, typed option values, labels, bundles, canonical form and
// round trip, JSON/YAML file forms, and every rejection (unknown stage/option with the nearest
// name, bad values, unbalanced braces, empty stages, duplicate labels) with its column.
#include "transforms/pipeline/pipeline.h"

#include <doctest/doctest.h>

#include <fstream>

#include "ir/errors.h"
#include "support/paths.h"

namespace {

using mcc::transforms::OptionType;
using mcc::transforms::PassInfo;
using mcc::transforms::PassRegistry;
using mcc::transforms::Pipeline;

/// A stage that only describes itself: the parser needs PassInfo, never run().
class InfoOnlyPass : public mcc::transforms::Pass {
 public:
  explicit InfoOnlyPass(PassInfo info) : info_(std::move(info)) {}
  const PassInfo& info() const override { return info_; }
  mcc::transforms::PassResult run(mcc::ir::Model&, mcc::transforms::PassContext&) override {
    return {};
  }

 private:
  PassInfo info_;
};

const PassRegistry& reg() {
  static const PassRegistry r = [] {
    PassRegistry r;
    r.add(std::make_unique<InfoOnlyPass>(
        PassInfo{"alpha",
                 "every option type",
                 {{"flag", OptionType::Bool, "true", "a switch", {}},
                  {"count", OptionType::Int, "3", "a count", {}},
                  {"ratio", OptionType::Float, "5e-1", "a ratio", {}},
                  {"mode", OptionType::String, "fast", "a choice", {"fast", "slow"}},
                  {"ops", OptionType::StringList, "", "op types", {}}}}));
    r.add(std::make_unique<InfoOnlyPass>(PassInfo{"beta", "no options", {}}));
    r.add_bundle("both", "alpha{count=1},beta", "alpha then beta");
    return r;
  }();
  return r;
}

/// The UsageError message of parsing `spec`, or "<accepted>".
std::string spec_error(std::string_view spec) {
  try {
    Pipeline::parse(spec, reg());
  } catch (const mcc::UsageError& e) {
    return e.what();
  }
  return "<accepted>";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string write(const mcc::test::TempDir& d, const std::string& name, const std::string& text) {
  const auto p = d.path / name;
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace

TEST_CASE("pipeline: the empty spec is the empty pipeline") {
  CHECK(Pipeline::parse("", reg()).empty());
  CHECK(Pipeline::parse("  \n ", reg()).empty());
  CHECK(Pipeline::parse("", reg()).to_string() == "");
}

TEST_CASE("pipeline: every option is resolved to its canonical value in declaration order") {
  const Pipeline p = Pipeline::parse("alpha", reg());
  REQUIRE(p.stages().size() == 1);
  CHECK(p.stages()[0].label == "alpha");
  CHECK(p.stages()[0].pass() == "alpha");
  CHECK(p.to_string() == "alpha{flag=true count=3 ratio=0.5 mode=fast ops=}");

  const Pipeline q = Pipeline::parse(
      "alpha{ops=Softmax,LayerNormalization mode=slow ratio=1e-3 count=-7 flag=no}", reg());
  CHECK(q.to_string() ==
        "alpha{flag=false count=-7 ratio=0.001 mode=slow ops=Softmax,LayerNormalization}");
  const auto& o = q.stages()[0].options;
  CHECK_FALSE(o.get_bool("flag"));
  CHECK(o.get_int("count") == -7);
  CHECK(o.get_float("ratio") == 0.001);
  CHECK(o.get_string("mode") == "slow");
  CHECK(o.get_list("ops") == std::vector<std::string>{"Softmax", "LayerNormalization"});
  CHECK(
      q.stages()[0].options_json().dump() ==
      R"({"flag":false,"count":-7,"ratio":0.001,"mode":"slow","ops":["Softmax","LayerNormalization"]})");
}

TEST_CASE("pipeline: whitespace is free around stages, labels and options") {
  const Pipeline p = Pipeline::parse("  x : alpha { count=2   ratio=2 } ,\n beta ", reg());
  CHECK(p.to_string() == "x:alpha{flag=true count=2 ratio=2 mode=fast ops=},beta");
}

TEST_CASE(
    "pipeline: labels default to the stage name, then name.2, name.3; explicit ones are kept") {
  const Pipeline p = Pipeline::parse("alpha,alpha,q:beta,beta,alpha", reg());
  REQUIRE(p.stages().size() == 5);
  CHECK(p.stages()[0].label == "alpha");
  CHECK(p.stages()[1].label == "alpha.2");
  CHECK(p.stages()[2].label == "q");
  CHECK(p.stages()[3].label == "beta.2");
  CHECK(p.stages()[4].label == "alpha.3");
  const std::string canon = p.to_string();
  CHECK(has(canon, "q:beta,beta,alpha{"));
  CHECK_FALSE(has(canon, "alpha.2"));  // default labels are implied, not printed
}

TEST_CASE("pipeline: parse(to_string()) round-trips") {
  for (const char* spec :
       {"", "alpha", "beta,beta", "a:alpha{ops=A,B,C},b-1:beta,alpha{flag=off ratio=0.1}",
        "alpha{ratio=0.30000000000000004 count=9223372036854775807}",
        R"(alpha{ops="a b,c" mode=slow})", "both", "alpha{ratio=-0 ops=}"}) {
    CAPTURE(spec);
    const Pipeline p = Pipeline::parse(spec, reg());
    const Pipeline again = Pipeline::parse(p.to_string(), reg());
    CHECK(again.to_string() == p.to_string());
    REQUIRE(again.stages().size() == p.stages().size());
    for (size_t i = 0; i < p.stages().size(); ++i) {
      CHECK(again.stages()[i].label == p.stages()[i].label);
      CHECK(again.stages()[i].options.items() == p.stages()[i].options.items());
    }
    // The JSON file form round-trips too.
    CHECK(Pipeline::from_json(p.to_json(), "x.json", reg()).to_string() == p.to_string());
  }
  const Pipeline q = Pipeline::parse(R"(alpha{ops="a b,c"})", reg());
  CHECK(q.stages()[0].options.get_list("ops") == std::vector<std::string>{"a b", "c"});
  CHECK(has(q.to_string(), R"(ops="a b,c")"));
}

TEST_CASE("pipeline: floats keep their exact value through the canonical form") {
  for (double x :
       {0.1, 1.0 / 3.0, 5e-324, 1.7976931348623157e308, 0.30000000000000004, 1e-7, -2.5}) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    const Pipeline p = Pipeline::parse(std::string("alpha{ratio=") + buf + "}", reg());
    CHECK(p.stages()[0].options.get_float("ratio") == x);
    CHECK(Pipeline::parse(p.to_string(), reg()).stages()[0].options.get_float("ratio") == x);
  }
}

TEST_CASE("pipeline: bundles expand in place") {
  const Pipeline p = Pipeline::parse("beta,both", reg());
  REQUIRE(p.stages().size() == 3);
  CHECK(p.stages()[1].pass() == "alpha");
  CHECK(p.stages()[1].options.get_int("count") == 1);
  CHECK(p.stages()[2].label == "beta.2");
  CHECK(has(spec_error("both{count=1}"), "bundle 'both' takes no label or options"));
}

TEST_CASE("pipeline: unknown stages and options name the nearest valid one and the column") {
  const std::string a = spec_error("alpah");
  CHECK(has(a, "column 1: unknown stage 'alpah' (did you mean 'alpha'?)"));
  CHECK(has(spec_error("beta,alpah"), "column 6: unknown stage 'alpah'"));
  CHECK(
      has(spec_error("beta, x:zzzzzzzz"), "column 9: unknown stage 'zzzzzzzz'; run 'mcc passes'"));
  CHECK_FALSE(has(spec_error("zzzzzzzz"), "did you mean"));
  const std::string o = spec_error("alpha{cont=1}");
  CHECK(has(o, "column 7: unknown option 'cont' for stage 'alpha' (did you mean 'count'?)"));
  CHECK(has(o, "options: flag, count, ratio, mode, ops"));
  CHECK(has(spec_error("beta{x=1}"), "the stage takes no options"));
}

TEST_CASE("pipeline: impossible stage orders are rejected before any work, with the order that works") {
  PassRegistry r;
  r.add(std::make_unique<InfoOnlyPass>(PassInfo{"alpha", "free", {}}));
  r.add(std::make_unique<InfoOnlyPass>(PassInfo{"beta", "free", {}}));
  r.add(std::make_unique<InfoOnlyPass>(PassInfo{"gamma", "never after beta", {}, {{"beta", "beta destroys what gamma reads"}}}));
  r.add(std::make_unique<InfoOnlyPass>(PassInfo{"delta", "not with epsilon", {}, {{"epsilon", "they exclude each other"}}}));
  r.add(std::make_unique<InfoOnlyPass>(PassInfo{"epsilon", "not with delta", {}, {{"delta", "they exclude each other"}}}));
  auto error = [&](std::string_view spec) -> std::string {
    try {
      Pipeline::parse(spec, r);
    } catch (const mcc::UsageError& e) {
      return e.what();
    }
    return "<accepted>";
  };
  CHECK(error("gamma,beta") == "<accepted>");
  const std::string e = error("beta,alpha,gamma");
  CHECK(has(e, "column 12: stage 'gamma' cannot run after 'beta' (column 1): beta destroys what gamma reads"));
  CHECK(has(e, "put 'gamma' before 'beta'"));
  CHECK(has(error("delta,epsilon"), "stage 'epsilon' cannot run after 'delta'"));
  CHECK(has(error("epsilon,delta"), "; use one of them"));
}

TEST_CASE("pipeline: values are checked against the option's type and choices") {
  CHECK(has(
      spec_error("alpha{flag=maybe}"),
      "column 7: bad value 'maybe' for option 'flag' of stage 'alpha': expected true or false"));
  CHECK(has(spec_error("alpha{count=1.5}"), "expected an integer"));
  CHECK(has(spec_error("alpha{count=}"), "expected an integer"));
  CHECK(has(spec_error("alpha{count=99999999999999999999}"), "expected an integer"));
  CHECK(has(spec_error("alpha{ratio=abc}"), "expected a finite number"));
  CHECK(has(spec_error("alpha{ratio=inf}"), "expected a finite number"));
  CHECK(has(spec_error("alpha{ratio=nan}"), "expected a finite number"));
  CHECK(has(spec_error("beta,alpha{count=2 mode=fats}"),
            "column 20: bad value 'fats' for option 'mode' of stage 'alpha': expected one of fast, "
            "slow (did you mean 'fast'?)"));
  CHECK(has(spec_error("alpha{ops=A,,B}"), "empty item in the list"));
}

TEST_CASE(
    "pipeline: unbalanced braces, empty stages and stray characters are rejected with their "
    "column") {
  CHECK(has(spec_error("alpha{count=1"), "column 6: unbalanced braces: '{' is never closed"));
  CHECK(has(spec_error("alpha}"), "column 6: unbalanced braces: '}' without a matching '{'"));
  CHECK(has(spec_error("alpha{count=1}}"), "column 15: unbalanced braces"));
  CHECK(has(spec_error("alpha{count={1}}"), "column 13: unbalanced braces"));
  CHECK(has(spec_error("alpha{{count=1}}"), "column 7: unbalanced braces"));
  CHECK(has(spec_error("alpha,,beta"), "column 7: empty stage"));
  CHECK(has(spec_error("alpha,"), "column 7: empty stage"));
  CHECK(has(spec_error(",alpha"), "column 1: empty stage"));
  CHECK(has(spec_error("{count=1}"), "column 1: empty stage name"));
  CHECK(has(spec_error("x:,beta"), "column 3: empty stage name after label 'x:'"));
  CHECK(has(spec_error("alpha beta"), "column 7: expected ',' between stages"));
  CHECK(has(spec_error("alpha{count}"), "column 7: option 'count' of stage 'alpha' has no value"));
  CHECK(has(spec_error("alpha{count=1 count=2}"),
            "column 15: option 'count' of stage 'alpha' is given twice"));
  CHECK(has(spec_error(R"(alpha{ops="a)"), "unterminated"));
}

TEST_CASE("pipeline: labels must be valid and unique") {
  CHECK(has(spec_error("a:alpha,a:beta"),
            "column 9: duplicate label 'a' (already used at pipeline 'a:alpha,a:beta', column 1)"));
  CHECK(has(spec_error("beta:alpha,beta"), "column 12: duplicate label 'beta'"));
  CHECK(has(spec_error("Q:alpha"), "column 1: invalid label 'Q'"));
  CHECK(has(spec_error("alpha.2:alpha"), "invalid label 'alpha.2'"));
  CHECK(has(spec_error(":alpha"), "column 1: empty label"));
}

TEST_CASE("pipeline: every error is one line") {
  for (const char* bad : {"alpah", "alpha{count=1", "alpha,,beta", "a:alpha,a:beta",
                          "alpha{mode=x}", "alpha{ops=\"\n"}) {
    CAPTURE(bad);
    const std::string e = spec_error(bad);
    CHECK(e != "<accepted>");
    CHECK(e.find('\n') == std::string::npos);
  }
}

TEST_CASE("pipeline: JSON file form, as a list or {\"pipeline\": ...}, with typed values") {
  using json = nlohmann::ordered_json;
  const json list = json::parse(R"([{"stage": "alpha", "label": "first",
      "options": {"flag": false, "count": 2, "ratio": 0.25, "ops": ["A", "B"]}}, "beta"])");
  const std::string want = "first:alpha{flag=false count=2 ratio=0.25 mode=fast ops=A,B},beta";
  CHECK(Pipeline::from_json(list, "p.json", reg()).to_string() == want);
  CHECK(Pipeline::from_json(json{{"pipeline", list}}, "p.json", reg()).to_string() == want);
  CHECK(
      Pipeline::from_json(json{{"pipeline", "beta,alpha{count=2}"}}, "p.json", reg()).to_string() ==
      "beta,alpha{flag=true count=2 ratio=0.5 mode=fast ops=}");
  CHECK(Pipeline::from_json(json::array(), "p.json", reg()).empty());

  auto err = [](const json& j) {
    try {
      Pipeline::from_json(j, "p.json", reg());
    } catch (const mcc::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("<accepted>");
  };
  CHECK(has(err(json::parse(R"([{"stage": "alpha", "options": {"count": "x"}}])")),
            "p.json: [0].options.count: bad value 'x' for option 'count'"));
  CHECK(has(err(json::parse(R"({"pipeline": [{"stage": "alpah"}]})")),
            "p.json: pipeline[0].stage: unknown stage 'alpah' (did you mean 'alpha'?)"));
  CHECK(has(err(json::parse(R"([{"stage": "alpha", "optoins": {}}])")),
            "unknown key 'optoins' in a stage (did you mean 'options'?)"));
  CHECK(has(err(json::parse(R"([{"label": "x"}])")), "p.json: [0]: empty stage"));
  CHECK(has(err(json::parse(R"([{"stage": "alpha", "options": {"count": [1, 2]}}])")),
            "bad value '1,2'"));
  CHECK(has(err(json::parse(R"([{"stage": "alpha", "options": {"ops": [["A"]]}}])")),
            "expected a single value"));
  CHECK(has(err(json::parse(R"({"stages": []})")), "unknown key 'stages'"));
  CHECK(has(
      err(json::parse(R"([{"stage": "beta", "label": "b"}, {"stage": "alpha", "label": "b"}])")),
      "p.json: [1].label: duplicate label 'b'"));
}

TEST_CASE("pipeline: YAML file form; errors carry line and column") {
  const std::string yaml =
      "# comments are welcome\n"
      "pipeline:\n"
      "  - stage: alpha\n"
      "    label: first\n"
      "    options:\n"
      "      flag: off\n"
      "      ratio: 0.25\n"
      "      ops: [A, B]\n"
      "  - beta\n";
  CHECK(Pipeline::from_yaml(yaml, "p.yaml", reg()).to_string() ==
        "first:alpha{flag=false count=3 ratio=0.25 mode=fast ops=A,B},beta");
  CHECK(
      Pipeline::from_yaml("- stage: beta\n- stage: alpha\n  options: {count: 4}\n", "p.yaml", reg())
          .to_string() == "beta,alpha{flag=true count=4 ratio=0.5 mode=fast ops=}");

  auto err = [](const std::string& text) {
    try {
      Pipeline::from_yaml(text, "p.yaml", reg());
    } catch (const mcc::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("<accepted>");
  };
  CHECK(has(err("pipeline:\n  - stage: alpha\n    options:\n      cuont: 1\n"),
            "p.yaml:4:7: pipeline[0].options.cuont: unknown option 'cuont' for stage 'alpha' (did "
            "you mean 'count'?)"));
  CHECK(has(err("- stage: beta\n- stage: fold-bn\n"),
            "p.yaml:2:3: [1].stage: unknown stage 'fold-bn'"));
  CHECK(has(err("pipeline: [alpha\n"), "p.yaml:"));
  CHECK(has(err("pipeline: [alpha\n"), "not valid YAML"));
}

TEST_CASE("pipeline: -p @file reads JSON, YAML or inline text by extension") {
  mcc::test::TempDir d("mcc-pipeline-file");
  const std::string want = "beta,alpha{flag=true count=2 ratio=0.5 mode=fast ops=}";
  CHECK(
      Pipeline::from_argument(
          "@" + write(d, "p.json", R"([{"stage":"beta"},{"stage":"alpha","options":{"count":2}}])"),
          reg())
          .to_string() == want);
  CHECK(Pipeline::from_argument(
            "@" + write(d, "p.yaml", "- beta\n- stage: alpha\n  options: {count: 2}\n"), reg())
            .to_string() == want);
  CHECK(Pipeline::from_argument(
            "@" + write(d, "p.yml", "[beta, {stage: alpha, options: {count: 2}}]\n"), reg())
            .to_string() == want);
  CHECK(Pipeline::from_argument("@" + write(d, "p.txt", "beta,\n alpha{count=2}\n"), reg())
            .to_string() == want);
  CHECK(Pipeline::from_argument("beta,alpha{count=2}", reg()).to_string() == want);
  CHECK_THROWS_AS(Pipeline::from_argument("@" + (d.path / "missing.yaml").string(), reg()),
                  mcc::UsageError);
  CHECK_THROWS_AS(Pipeline::from_argument("@", reg()), mcc::UsageError);
  CHECK_THROWS_WITH_AS(Pipeline::from_argument("@" + write(d, "bad.json", "[{"), reg()),
                       doctest::Contains("not valid JSON"), mcc::UsageError);
}

TEST_CASE("pipeline: the registry lists stages sorted and suggests near names") {
  const auto list = reg().list();
  REQUIRE(list.size() == 2);
  CHECK(list[0]->name == "alpha");
  CHECK(list[1]->name == "beta");
  CHECK(reg().names() == std::vector<std::string>{"alpha", "beta", "both"});
  CHECK(mcc::transforms::nearest_name("fold-bn", {"fold", "fp16", "prune", "quantize"}) == "fold");
  CHECK(mcc::transforms::nearest_name("quantise", {"fold", "fp16", "prune", "quantize"}) ==
        "quantize");
  CHECK(mcc::transforms::nearest_name("fp61", {"fold", "fp16", "prune", "quantize"}) == "fp16");
  CHECK(mcc::transforms::nearest_name("xyzzy", {"fold", "fp16", "prune", "quantize"}) == "");
  CHECK_THROWS_AS(reg().create("gamma"), mcc::UsageError);
  CHECK(reg().create("beta")->info().name == "beta");
}
