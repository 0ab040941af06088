// Text kernels.
//   StringNormalizer  opset 10: stopword removal (whole elements, case-sensitive or not), then
//                     case change LOWER/UPPER/NONE. Input [C] or [1, C]; an all-removed result is
//                     a single empty string ([1] or [1, 1]).
//   TfIdfVectorizer   opset 9: TF/IDF/TFIDF over n-grams from pool_strings or pool_int64s, with
//                     skip-grams up to max_skip_count. Input [C] or [B, C] -> [out] or [B, out].
// dtypes: StringNormalizer string; TfIdfVectorizer input string, i32, i64; output f32.
// Accumulation: i64 n-gram counts.
// Not supported: the locale attribute is ignored (case mapping uses the C.UTF-8 locale's wide
// character tables when available, otherwise ASCII); accents are not stripped.
#include <cstdint>
#include <cwctype>
#include <locale>
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/kernels/misc_util.h"

namespace mcc::backends::cpu {
namespace {

// ---------------------------------------------------------------------------- StringNormalizer

/// UTF-8 -> code points; invalid bytes are kept as themselves.
std::u32string utf8_decode(const std::string& s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) { out.push_back(c); ++i; continue; }
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    bool ok = true;
    for (int k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 2) { ok = false; break; }
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (!ok) { out.push_back(c); ++i; continue; }
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string utf8_encode(const std::u32string& s) {
  std::string out;
  for (char32_t cp : s) {
    if (cp < 0x80) out.push_back(static_cast<char>(cp));
    else if (cp < 0x800) { out.push_back(static_cast<char>(0xc0 | (cp >> 6))); out.push_back(static_cast<char>(0x80 | (cp & 0x3f))); }
    else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
  return out;
}

const std::locale* utf8_locale() {
  static const std::locale* loc = []() -> const std::locale* {
    for (const char* name : {"C.UTF-8", "C.utf8", "en_US.UTF-8"}) {
      try { return new std::locale(name); } catch (const std::exception&) {}
    }
    return nullptr;
  }();
  return loc;
}

std::string change_case(const std::string& s, bool upper) {
  bool ascii = true;
  for (char c : s) if (static_cast<unsigned char>(c) >= 0x80) { ascii = false; break; }
  if (ascii || !utf8_locale()) {
    std::string r = s;
    for (char& c : r)
      if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      else if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return r;
  }
  const auto& ct = std::use_facet<std::ctype<wchar_t>>(*utf8_locale());
  std::u32string u = utf8_decode(s);
  for (char32_t& cp : u) {
    const auto w = static_cast<wchar_t>(cp);
    cp = static_cast<char32_t>(upper ? ct.toupper(w) : ct.tolower(w));
  }
  return utf8_encode(u);
}

enum class CaseAction { None, Lower, Upper };

Kernel make_string_normalizer(const ir::Node& node) {
  const std::string act = node.attr_string("case_change_action", "NONE");
  CaseAction action;
  if (act == "NONE") action = CaseAction::None;
  else if (act == "LOWER") action = CaseAction::Lower;
  else if (act == "UPPER") action = CaseAction::Upper;
  else throw ModelError(node.describe() + ": case_change_action must be LOWER, UPPER or NONE, got '" + act + "'");
  const bool sensitive = node.attr_int("is_case_sensitive", 0) != 0;
  std::set<std::string> stops;
  for (const auto& w : node.attr_strings("stopwords")) stops.insert(sensitive ? w : change_case(w, false));
  return [action, sensitive, stops](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.dtype() != ir::DType::String)
      throw UnsupportedError(n.describe() + ": X must be a string tensor, got " + ir::dtype_name(x.dtype()));
    const bool two_d = x.rank() == 2;
    if (!(x.rank() == 1 || (two_d && x.dims()[0] == 1)))
      throw ModelError(n.describe() + ": X must be [C] or [1, C], got " + misc::dims_str(x.dims()));
    std::vector<std::string> out;
    for (const auto& s : x.strings()) {
      if (!stops.empty() && stops.count(sensitive ? s : change_case(s, false))) continue;
      out.push_back(action == CaseAction::None ? s : change_case(s, action == CaseAction::Upper));
    }
    if (out.empty()) out.emplace_back();
    const auto c = static_cast<int64_t>(out.size());
    ctx.set_output(0, ir::Tensor::from_strings(two_d ? std::vector<int64_t>{1, c} : std::vector<int64_t>{c}, std::move(out)));
  };
}

// ---------------------------------------------------------------------------- TfIdfVectorizer

enum class Weighting { TF, IDF, TFIDF };

struct TfIdf {
  Weighting mode = Weighting::TF;
  int64_t min_gram = 1, max_gram = 1, max_skip = 0, out_size = 0;
  std::vector<int64_t> ngram_indexes;
  std::vector<float> weights;
  bool strings = false;
  std::map<std::vector<std::string>, int64_t> str_grams;  // n-gram -> output column
  std::map<std::vector<int64_t>, int64_t> int_grams;
};

template <class Tok>
void count_row(const TfIdf& t, const std::map<std::vector<Tok>, int64_t>& grams, const std::vector<Tok>& row,
               int64_t* counts) {
  const auto C = static_cast<int64_t>(row.size());
  int64_t start_size = t.min_gram;
  std::vector<Tok> key;
  for (int64_t dist = 1; dist <= t.max_skip + 1; ++dist) {
    for (int64_t s0 = 0; s0 < C; ++s0)
      for (int64_t sz = start_size; sz <= t.max_gram; ++sz) {
        if (s0 + dist * (sz - 1) >= C) break;
        key.clear();
        for (int64_t k = 0; k < sz; ++k) key.push_back(row[s0 + k * dist]);
        auto it = grams.find(key);
        if (it != grams.end()) ++counts[it->second];
      }
    // Unigrams are counted once, not once per skip distance.
    if (start_size == 1) {
      start_size = 2;
      if (start_size > t.max_gram) break;
    }
  }
}

Kernel make_tfidf(const ir::Node& node) {
  auto t = std::make_shared<TfIdf>();
  const std::string mode = node.attr_string("mode", "");
  if (mode == "TF") t->mode = Weighting::TF;
  else if (mode == "IDF") t->mode = Weighting::IDF;
  else if (mode == "TFIDF") t->mode = Weighting::TFIDF;
  else throw ModelError(node.describe() + ": mode must be TF, IDF or TFIDF, got '" + mode + "'");
  t->min_gram = node.attr_int("min_gram_length", 1);
  t->max_gram = node.attr_int("max_gram_length", 1);
  t->max_skip = node.attr_int("max_skip_count", 0);
  if (t->min_gram < 1 || t->max_gram < t->min_gram || t->max_skip < 0)
    throw ModelError(node.describe() + ": need 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
  const std::vector<int64_t> counts = node.attr_ints("ngram_counts");
  t->ngram_indexes = node.attr_ints("ngram_indexes");
  t->weights = node.attr_floats("weights");
  const std::vector<int64_t> pool_i = node.attr_ints("pool_int64s");
  const std::vector<std::string> pool_s = node.attr_strings("pool_strings");
  t->strings = !pool_s.empty();
  if (t->strings == !pool_i.empty() && !(pool_s.empty() && pool_i.empty()))
    throw ModelError(node.describe() + ": exactly one of pool_strings and pool_int64s must be set");
  const auto total = static_cast<int64_t>(t->strings ? pool_s.size() : pool_i.size());
  for (int64_t v : t->ngram_indexes) {
    if (v < 0) throw ModelError(node.describe() + ": ngram_indexes must be >= 0");
    t->out_size = std::max(t->out_size, v + 1);
  }
  if (!t->weights.empty() && static_cast<int64_t>(t->weights.size()) < t->out_size)
    throw ModelError(node.describe() + ": weights must have one entry per output column");
  int64_t id = 0;  // 0-based n-gram id over the whole pool
  for (size_t i = 0; i < counts.size(); ++i) {
    const auto sz = static_cast<int64_t>(i + 1);
    const int64_t b = counts[i], e = i + 1 < counts.size() ? counts[i + 1] : total;
    if (b < 0 || e > total || e < b) throw ModelError(node.describe() + ": ngram_counts do not fit the pool");
    for (int64_t p = b; p + sz <= e; p += sz, ++id) {
      if (sz < t->min_gram || sz > t->max_gram) continue;
      if (id >= static_cast<int64_t>(t->ngram_indexes.size()))
        throw ModelError(node.describe() + ": ngram_indexes has fewer entries than the pool has n-grams");
      if (t->strings) t->str_grams.emplace(std::vector<std::string>(pool_s.begin() + p, pool_s.begin() + p + sz), t->ngram_indexes[id]);
      else t->int_grams.emplace(std::vector<int64_t>(pool_i.begin() + p, pool_i.begin() + p + sz), t->ngram_indexes[id]);
    }
  }
  return [t](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.rank() > 2) throw ModelError(n.describe() + ": X must be [C] or [B, C], got " + misc::dims_str(x.dims()));
    const int64_t B = x.rank() == 2 ? x.dims()[0] : 1;
    const int64_t C = x.rank() == 0 ? 1 : x.dims().back();
    std::vector<int64_t> counts(static_cast<size_t>(B * t->out_size), 0);
    if (x.dtype() == ir::DType::String) {
      if (!t->strings && !t->int_grams.empty())
        throw ModelError(n.describe() + ": string input needs pool_strings");
      for (int64_t b = 0; b < B; ++b) {
        std::vector<std::string> row(x.strings().begin() + b * C, x.strings().begin() + (b + 1) * C);
        count_row(*t, t->str_grams, row, counts.data() + b * t->out_size);
      }
    } else {
      if (t->strings) throw ModelError(n.describe() + ": integer input needs pool_int64s");
      const std::vector<int64_t> v = read_int_tensor(n, x, "X");
      for (int64_t b = 0; b < B; ++b) {
        std::vector<int64_t> row(v.begin() + b * C, v.begin() + (b + 1) * C);
        count_row(*t, t->int_grams, row, counts.data() + b * t->out_size);
      }
    }
    std::vector<int64_t> od = x.rank() == 2 ? std::vector<int64_t>{B, t->out_size} : std::vector<int64_t>{t->out_size};
    auto y = ctx.alloc_output(0, ir::DType::F32, od).mutable_data<float>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < t->out_size; ++i) {
        const int64_t f = counts[b * t->out_size + i];
        const float w = t->weights.empty() ? 1.0f : t->weights[i];
        float v = 0.0f;
        if (t->mode == Weighting::TF) v = static_cast<float>(f);
        else if (t->mode == Weighting::IDF) v = f > 0 ? w : 0.0f;
        else v = w * static_cast<float>(f);
        y[b * t->out_size + i] = v;
      }
  };
}

}  // namespace

void register_text(KernelRegistry& r) {
  r.add("StringNormalizer", 10, 0, make_string_normalizer);
  r.add("TfIdfVectorizer", 9, 0, make_tfidf);
}

}  // namespace mcc::backends::cpu
