// Unit tests of ir/labels.*: class labels from text (comments, blank lines, CRLF) and from .npy
// (any integer dtype, [N] or [N,1]); every bad file is a ModelError naming the file and what.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/errors.h"
#include "ir/labels.h"
#include "ir/npy.h"
#include "ir/tensor.h"
#include "support/files.h"
#include "support/paths.h"

using mcc::ir::read_labels;
using mcc::ir::Tensor;

namespace {

std::string write_text(const mcc::test::TempDir& d, const std::string& name, const std::string& text) {
  const auto p = d.path / name;
  mcc::test::spit(p, text);
  return p.string();
}

template <class T>
std::string write_npy(const mcc::test::TempDir& d, const std::string& name, std::vector<int64_t> dims, std::vector<T> v) {
  const auto p = (d.path / name).string();
  mcc::ir::save_npy(Tensor::from_vector<T>(std::move(dims), v), p);
  return p;
}

// The message of the ModelError read_labels throws ("" when it throws nothing or something else).
std::string model_error(const std::string& path) {
  try {
    read_labels(path);
  } catch (const mcc::ModelError& e) {
    return e.what();
  } catch (...) {
    return "threw something other than ModelError";
  }
  return "";
}

}  // namespace

TEST_CASE("read_labels: text, one integer per line; blank lines, # comments, spaces and CRLF ignored") {
  mcc::test::TempDir d("mcc-labels");
  const auto p = write_text(d, "labels.txt", "# labels of eval/\n7\n\n  2 \r\n0  # a zero\n\t11\n9");
  CHECK(read_labels(p) == std::vector<int64_t>{7, 2, 0, 11, 9});
  CHECK(read_labels(write_text(d, "bom.txt", "\xEF\xBB\xBF" "3\n4\n")) == std::vector<int64_t>{3, 4});
}

TEST_CASE("read_labels: .npy of any integer dtype, shape [N] or [N,1], whatever the file is called") {
  mcc::test::TempDir d("mcc-labels");
  CHECK(read_labels(write_npy<int64_t>(d, "a.npy", {3}, {4, 0, 9})) == std::vector<int64_t>{4, 0, 9});
  CHECK(read_labels(write_npy<int32_t>(d, "b.npy", {3, 1}, {1, 2, 3})) == std::vector<int64_t>{1, 2, 3});
  CHECK(read_labels(write_npy<uint8_t>(d, "c.npy", {2}, {255, 0})) == std::vector<int64_t>{255, 0});
  CHECK(read_labels(write_npy<uint64_t>(d, "d.npy", {1}, {5})) == std::vector<int64_t>{5});
  CHECK(read_labels(write_npy<int16_t>(d, "labels.txt", {2}, {6, 8})) == std::vector<int64_t>{6, 8});
}

TEST_CASE("read_labels: bad text names the file, the line and the text") {
  mcc::test::TempDir d("mcc-labels");
  const auto p = write_text(d, "bad.txt", "1\n2\n3.5\n");
  const auto e = model_error(p);
  CHECK(e.find(p) != std::string::npos);
  CHECK(e.find("line 3") != std::string::npos);
  CHECK(e.find("'3.5' is not an integer label") != std::string::npos);
  CHECK(model_error(write_text(d, "word.txt", "cat\n")).find("line 1: 'cat'") != std::string::npos);
  CHECK(model_error(write_text(d, "two.txt", "1 2\n")).find("line 1: '1 2'") != std::string::npos);
  CHECK(model_error(write_text(d, "neg.txt", "0\n-1\n")).find("line 2: label -1 is negative") != std::string::npos);
  CHECK(model_error(write_text(d, "huge.txt", "99999999999999999999\n")).find("line 1") != std::string::npos);
  CHECK(model_error(write_text(d, "ctl.txt", "\x1b[2J\n")).find("\\x1b") != std::string::npos);  // escaped, one line
}

TEST_CASE("read_labels: bad .npy files name the file and the dtype, shape or index") {
  mcc::test::TempDir d("mcc-labels");
  CHECK(model_error(write_npy<float>(d, "f.npy", {2}, {1, 2})).find("labels must be integers, not f32") != std::string::npos);
  CHECK(model_error(write_npy<int64_t>(d, "s.npy", {2, 2}, {1, 2, 3, 4})).find("shape [N] or [N,1], not [2,2]") !=
        std::string::npos);
  CHECK(model_error(write_npy<int64_t>(d, "n.npy", {2}, {1, -3})).find("label 1 is negative (-3)") != std::string::npos);
  CHECK(model_error(write_npy<uint64_t>(d, "u.npy", {1}, {~uint64_t{0}})).find("label 0 is out of range") != std::string::npos);
  CHECK(model_error(write_npy<uint8_t>(d, "b.npy", {0}, {})).find("holds no labels") != std::string::npos);
  const auto trunc = write_text(d, "t.npy", std::string("\x93NUMPY\x01\x00", 8) + "{'descr");
  CHECK(model_error(trunc).find(trunc) != std::string::npos);
}

TEST_CASE("read_labels: a missing, empty or comment-only file is a ModelError naming it") {
  mcc::test::TempDir d("mcc-labels");
  const auto missing = (d.path / "none.txt").string();
  CHECK(model_error(missing).find(missing + ": cannot open the labels file") != std::string::npos);
  CHECK(model_error(d.path.string()).find("cannot open the labels file") != std::string::npos);
  CHECK(model_error(write_text(d, "empty.txt", "")).find("empty.txt: holds no labels") != std::string::npos);
  CHECK(model_error(write_text(d, "comments.txt", "# nothing\n\n")).find("holds no labels") != std::string::npos);
}
