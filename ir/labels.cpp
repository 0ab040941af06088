// Reading class labels from .npy or text (see labels.h).
#include "ir/labels.h"
#include "ir/dims_text.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>

#include "ir/dtype.h"
#include "ir/errors.h"
#include "ir/npy.h"
#include "ir/tensor.h"
#include "ir/text_escape.h"

namespace mcc::ir {
namespace {

bool starts_with_npy_magic(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[6] = {};
  return f.read(magic, 6) && std::string_view(magic, 6) == "\x93NUMPY";
}

std::vector<int64_t> labels_from_npy(const std::string& path) {
  Tensor t;
  try {
    t = load_npy(path);
  } catch (const UnsupportedError& e) {
    // A label file mcc cannot read is bad input here, not a missing feature of a model.
    throw ModelError(std::string(e.what()) + " (labels need an integer array)");
  }
  const auto& d = t.dims();
  if (!(d.size() == 1 || (d.size() == 2 && d[1] == 1)))
    throw ModelError(path + ": labels must have shape [N] or [N,1], not " + dims_text(d));
  if (!info(t.dtype()).is_int || t.dtype() == DType::Bool)
    throw ModelError(path + ": labels must be integers, not " + dtype_name(t.dtype()));
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(t.numel()));
  dispatch<MCC_INT_DTYPES>(t.dtype(), "labels", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (T v : t.data<T>()) {
      if constexpr (std::is_signed_v<T>) {
        if (v < 0) throw ModelError(path + ": label " + std::to_string(out.size()) + " is negative (" + std::to_string(v) + ")");
      } else if constexpr (sizeof(T) == 8) {
        if (v > static_cast<T>(std::numeric_limits<int64_t>::max()))
          throw ModelError(path + ": label " + std::to_string(out.size()) + " is out of range (" + std::to_string(v) + ")");
      }
      out.push_back(static_cast<int64_t>(v));
    }
  });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<int64_t> labels_from_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<int64_t> out;
  std::string line;
  for (size_t no = 1; std::getline(f, line); ++no) {
    std::string_view s = line;
    if (no == 1 && s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);  // a UTF-8 byte-order mark
    if (const auto hash = s.find('#'); hash != std::string_view::npos) s = s.substr(0, hash);
    s = trim(s);
    if (s.empty()) continue;
    int64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    const auto where = [&] { return path + ", line " + std::to_string(no) + ": "; };
    if (ec != std::errc() || p != s.data() + s.size())
      throw ModelError(where() + "'" + printable_line(s, 40) + "' is not an integer label (one integer per line)");
    if (v < 0) throw ModelError(where() + "label " + std::to_string(v) + " is negative");
    out.push_back(v);
  }
  return out;
}

}  // namespace

std::vector<int64_t> read_labels(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || !std::ifstream(path, std::ios::binary))
    throw ModelError(path + ": cannot open the labels file (missing, a folder, or unreadable)");
  auto labels = starts_with_npy_magic(path) ? labels_from_npy(path) : labels_from_text(path);
  if (labels.empty()) throw ModelError(path + ": holds no labels");
  return labels;
}

}  // namespace mcc::ir
