// StringConcat, StringSplit and RegexFullMatch (opset 20). Expected values follow Python's
// str + str, str.split and re.fullmatch, worked out by hand.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;
using ir::DType;

namespace {
ir::Tensor strs(std::vector<int64_t> dims, std::vector<std::string> v) {
  return ir::Tensor::from_strings(std::move(dims), std::move(v));
}
}  // namespace

TEST_CASE("StringConcat joins elementwise with broadcasting") {
  ir::Tensor z =
      OpTest("StringConcat", 20).in(strs({3}, {"cat", "dog", ""})).in(strs({1}, {"s"})).run1();
  CHECK(z.dims() == std::vector<int64_t>{3});
  CHECK(z.strings() == std::vector<std::string>{"cats", "dogs", "s"});
  ir::Tensor g = OpTest("StringConcat", 20)
                     .in(strs({2, 1}, {"a", "b"}))
                     .in(strs({2}, {"1", "\xe4\xb8\xad"}))
                     .run1();
  CHECK(g.dims() == std::vector<int64_t>{2, 2});
  CHECK(g.strings() == std::vector<std::string>{"a1", "a\xe4\xb8\xad", "b1", "b\xe4\xb8\xad"});
  ir::Tensor s = OpTest("StringConcat", 20).in(strs({}, {"x"})).in(strs({}, {"y"})).run1();
  CHECK(s.dims().empty());
  CHECK(s.strings().at(0) == "xy");
  CHECK_THROWS_AS(
      OpTest("StringConcat", 20).in(strs({2}, {"a", "b"})).in(strs({3}, {"a", "b", "c"})).run1(),
      ModelError);
  CHECK_THROWS_AS(OpTest("StringConcat", 20).in(vec<float>({1})).in(strs({1}, {"a"})).run1(),
                  ModelError);
}

TEST_CASE("StringSplit on a delimiter keeps empty pieces and pads rows") {
  auto out =
      OpTest("StringSplit", 20).s("delimiter", "-").in(strs({2}, {"o-n--x-", "ab"})).outs(2).run();
  CHECK(out[0].dims() == std::vector<int64_t>{2, 5});
  CHECK(out[0].strings() == std::vector<std::string>{"o", "n", "", "x", "", "ab", "", "", "", ""});
  CHECK(values(out[1]) == std::vector<double>{5, 1});
  // A multi-character delimiter and maxsplit.
  auto m = OpTest("StringSplit", 20)
               .s("delimiter", "::")
               .i("maxsplit", 1)
               .in(strs({1}, {"a::b::c"}))
               .outs(2)
               .run();
  CHECK(m[0].strings() == std::vector<std::string>{"a", "b::c"});
  CHECK(values(m[1]) == std::vector<double>{2});
}

TEST_CASE("StringSplit without a delimiter splits on whitespace runs") {
  auto out =
      OpTest("StringSplit", 20).in(strs({3}, {"  hello \t world ", "", "one"})).outs(2).run();
  CHECK(out[0].dims() == std::vector<int64_t>{3, 2});
  CHECK(out[0].strings() == std::vector<std::string>{"hello", "world", "", "", "one", ""});
  CHECK(values(out[1]) == std::vector<double>{2, 0, 1});
  // maxsplit: the rest keeps its inner and trailing spaces (Python's ' the quick  brown fox
  // '.split(None, 2)).
  auto m = OpTest("StringSplit", 20)
               .i("maxsplit", 2)
               .s("delimiter", "")
               .in(strs({1}, {" the quick  brown fox  "}))
               .outs(2)
               .run();
  CHECK(m[0].strings() == std::vector<std::string>{"the", "quick", "brown fox  "});
  // U+00A0 (no-break space) is whitespace to Python's str.split.
  auto u = OpTest("StringSplit", 20)
               .in(strs({1}, {"a\xc2\xa0"
                              "b"}))
               .outs(2)
               .run();
  CHECK(u[0].strings() == std::vector<std::string>{"a", "b"});
  // An empty input gives [0, 0] substrings.
  auto e = OpTest("StringSplit", 20).in(strs({0}, {})).outs(2).run();
  CHECK(e[0].dims() == std::vector<int64_t>{0, 0});
  CHECK(e[1].dims() == std::vector<int64_t>{0});
}

TEST_CASE("RegexFullMatch matches whole elements") {
  ir::Tensor y = OpTest("RegexFullMatch", 20)
                     .s("pattern", R"(www\.[\w.-]+\.\bcom\b)")
                     .in(strs({3}, {"www.google.com", "www.bbc.co.uk", "xwww.a.com"}))
                     .run1();
  CHECK(y.dtype() == DType::Bool);
  CHECK(values(y) == std::vector<double>{1, 0, 0});
  ir::Tensor mail = OpTest("RegexFullMatch", 20)
                        .s("pattern", R"((\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$))")
                        .in(strs({2, 2}, {"account@gmail.com", "account@hotmail.com", "not email",
                                          "a2@yahoo.com"}))
                        .run1();
  CHECK(mail.dims() == std::vector<int64_t>{2, 2});
  CHECK(values(mail) == std::vector<double>{1, 0, 0, 1});
  // RE2 spellings translated: (?i), \A, \z.
  ir::Tensor ci = OpTest("RegexFullMatch", 20)
                      .s("pattern", R"((?i)\Aab+c\z)")
                      .in(strs({2}, {"ABBC", "abd"}))
                      .run1();
  CHECK(values(ci) == std::vector<double>{1, 0});
  ir::Tensor empty = OpTest("RegexFullMatch", 20).s("pattern", "a").in(strs({2, 0}, {})).run1();
  CHECK(empty.dims() == std::vector<int64_t>{2, 0});
}

TEST_CASE("RegexFullMatch rejects invalid patterns and RE2-only syntax") {
  CHECK_THROWS_AS(OpTest("RegexFullMatch", 20).s("pattern", "(ab").in(strs({1}, {"ab"})).run1(),
                  ModelError);
  CHECK_THROWS_AS(OpTest("RegexFullMatch", 20).in(strs({1}, {"ab"})).run1(), ModelError);
  CHECK_THROWS_AS(OpTest("RegexFullMatch", 20).s("pattern", R"(\pL+)").in(strs({1}, {"ab"})).run1(),
                  UnsupportedError);
  CHECK_THROWS_AS(OpTest("RegexFullMatch", 20).s("pattern", "(?P<x>a)").in(strs({1}, {"a"})).run1(),
                  UnsupportedError);
  CHECK_THROWS_AS(OpTest("RegexFullMatch", 20).s("pattern", "a(?s).").in(strs({1}, {"a"})).run1(),
                  UnsupportedError);
}
