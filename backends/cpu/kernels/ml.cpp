// Classical ML kernels of the ai.onnx.ml domain.
//   Binarizer              ai.onnx.ml 1: y = x > threshold ? 1 : 0 (NaN gives 0), same dtype;
//                          f32, f64, i32, i64.
//   ArrayFeatureExtractor  ai.onnx.ml 1: picks the columns Y (i64, flattened) of the last axis of
//                          X: output X.shape[:-1] + [len(Y)] ([1, len(Y)] for a 1-D X);
//                          f32, f64, i32, i64, string. Indices must lie in [0, last dim).
//   LabelEncoder           ai.onnx.ml 1, 2, 4: maps each element through keys -> values:
//                          opset 2+ keys_{strings,int64s,floats,tensor} and values_{...} with
//                          default_{string,int64,float,tensor} (spec defaults "_Unused", -1, -0.0);
//                          opset 1 classes_strings (string -> index, or index -> string) with
//                          default_int64/default_string. Keys and input: string, i16, i32, i64
//                          (compared as integers), f32, f64 (compared as doubles; a NaN key
//                          matches any NaN); values any of string, i16, i32, i64, f32, f64. A
//                          repeated key: the last one wins.
//   TreeEnsemble           ai.onnx.ml 5: X [N, F] (or [F]) f32, f64, f16 -> Y [N, n_targets]
//                          same dtype. Node modes LEQ, LT, GTE, GT, EQ, NEQ and MEMBER (sets from
//                          membership_values, NaN-delimited, in node order), missing-value
//                          tracking, aggregate AVERAGE, SUM, MIN, MAX (targets no leaf reaches
//                          keep the dtype's max / lowest for MIN / MAX, as ONNX's reference),
//                          post_transform NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT.
//                          nodes_hitrates is ignored. Rows run in parallel.
// Accumulation: f64 (comparisons against thresholds and leaf sums). Not supported: the older
// TreeEnsembleRegressor/Classifier and the other ai.onnx.ml ops.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unsupported/Eigen/SpecialFunctions>
#include <vector>

#include "backends/cpu/kernels/misc_util.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;
constexpr const char* kMl = "ai.onnx.ml";

// ---------------------------------------------------------------------------- Binarizer

Kernel make_binarizer(const ir::Node& node) {
  const double threshold = node.attr_float("threshold", 0.0f);
  return [threshold](KernelContext& ctx) {
    const ir::Tensor& x = ctx.in(0);
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    ir::dispatch<DType::F32, DType::F64, DType::I32, DType::I64>(
        x.dtype(), ctx.node().describe() + ": Binarizer", [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* src = x.data<T>().data();
          T* dst = y.mutable_data<T>().data();
          for (int64_t i = 0; i < x.numel(); ++i)
            dst[i] = static_cast<double>(src[i]) > threshold ? T(1) : T(0);
        });
  };
}

// ----------------------------------------------------------------------------
// ArrayFeatureExtractor

void array_feature_extractor(KernelContext& ctx) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& x = ctx.in(0);
  const auto idx = read_int_tensor(n, ctx.in(1), "Y");
  if (x.rank() == 0)
    throw ModelError(n.describe() + ": ArrayFeatureExtractor X must have rank >= 1");
  const int64_t last = x.dims().back();
  for (int64_t i : idx)
    if (i < 0 || i >= last)
      throw ModelError(n.describe() + ": ArrayFeatureExtractor index " + std::to_string(i) +
                       " is outside [0, " + std::to_string(last) + ")");
  std::vector<int64_t> dims = x.rank() == 1
                                  ? std::vector<int64_t>{1}
                                  : std::vector<int64_t>(x.dims().begin(), x.dims().end() - 1);
  const int64_t rows = x.rank() == 1 ? 1 : x.numel() / std::max<int64_t>(last, 1);
  const int64_t k = static_cast<int64_t>(idx.size());
  dims.push_back(k);
  ir::Tensor& z = ctx.alloc_output(0, x.dtype(), dims);
  if (x.dtype() == DType::String) {
    const auto& xs = x.strings();
    auto& zs = z.mutable_strings();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j)
        zs[static_cast<size_t>(r * k + j)] = xs[static_cast<size_t>(r * last + idx[j])];
    return;
  }
  ir::dispatch<DType::F32, DType::F64, DType::I32, DType::I64>(
      x.dtype(), n.describe() + ": ArrayFeatureExtractor", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* src = x.data<T>().data();
        T* dst = z.mutable_data<T>().data();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < k; ++j) dst[r * k + j] = src[r * last + idx[j]];
      });
}

// ---------------------------------------------------------------------------- LabelEncoder

enum class KeyKind { String, Int, Float };

KeyKind key_kind(DType dt) {
  if (dt == DType::String) return KeyKind::String;
  if (dt == DType::I16 || dt == DType::I32 || dt == DType::I64) return KeyKind::Int;
  return KeyKind::Float;
}

bool label_dtype_ok(DType dt) {
  return dt == DType::String || dt == DType::I16 || dt == DType::I32 || dt == DType::I64 ||
         dt == DType::F32 || dt == DType::F64;
}

/// Element i of a label tensor as double (numeric dtypes above).
double label_num(const ir::Tensor& t, int64_t i) {
  double v = 0;
  ir::dispatch<DType::I16, DType::I32, DType::I64, DType::F32, DType::F64>(
      t.dtype(), "LabelEncoder", [&](auto tag) {
        using T = typename decltype(tag)::type;
        v = static_cast<double>(t.data<T>()[static_cast<size_t>(i)]);
      });
  return v;
}
int64_t label_int(const ir::Tensor& t, int64_t i) {
  int64_t v = 0;
  ir::dispatch<DType::I16, DType::I32, DType::I64>(t.dtype(), "LabelEncoder", [&](auto tag) {
    using T = typename decltype(tag)::type;
    v = static_cast<int64_t>(t.data<T>()[static_cast<size_t>(i)]);
  });
  return v;
}

/// The parsed mapping: key -> index into `values`; index -1 means the default.
struct LabelMap {
  KeyKind kind = KeyKind::String;
  DType key_dtype = DType::String;
  std::unordered_map<std::string, int64_t> by_string;
  std::unordered_map<int64_t, int64_t> by_int;
  std::map<double, int64_t> by_float;
  int64_t nan_index = -1;  // a NaN key
  ir::Tensor values;       // 1-D, output dtype
  ir::Tensor def;          // one element, output dtype

  int64_t find_string(const std::string& s) const {
    auto it = by_string.find(s);
    return it == by_string.end() ? -1 : it->second;
  }
  int64_t find_int(int64_t v) const {
    auto it = by_int.find(v);
    return it == by_int.end() ? -1 : it->second;
  }
  int64_t find_float(double v) const {
    if (std::isnan(v)) return nan_index;
    auto it = by_float.find(v);
    return it == by_float.end() ? -1 : it->second;
  }
};

ir::Tensor strings_tensor(std::vector<std::string> v) {
  const auto n = static_cast<int64_t>(v.size());
  return ir::Tensor::from_strings({n}, std::move(v));
}

std::shared_ptr<const LabelMap> parse_label_encoder(const ir::Node& n) {
  auto m = std::make_shared<LabelMap>();
  ir::Tensor keys;
  if (n.since_version == 1 || (n.has_attr("classes_strings") && !n.has_attr("keys_strings"))) {
    // Opset 1: classes_strings, and the direction follows the input dtype at run time: both maps
    // are built; values hold the class strings, the indices are the int keys.
    const auto classes = n.attr_strings("classes_strings");
    m->kind = KeyKind::String;
    for (size_t i = 0; i < classes.size(); ++i) {
      m->by_string[classes[i]] = static_cast<int64_t>(i);
      m->by_int[static_cast<int64_t>(i)] = static_cast<int64_t>(i);
    }
    m->values = strings_tensor(classes);
    m->def = ir::Tensor::from_strings({1}, {n.attr_string("default_string", "_Unused")});
    return m;
  }
  int nkeys = 0;
  if (n.has_attr("keys_strings")) {
    keys = strings_tensor(n.attr_strings("keys_strings"));
    ++nkeys;
  }
  if (n.has_attr("keys_int64s")) {
    keys = ir::Tensor::from_vector<int64_t>(
        {static_cast<int64_t>(n.attr_ints("keys_int64s").size())}, n.attr_ints("keys_int64s"));
    ++nkeys;
  }
  if (n.has_attr("keys_floats")) {
    keys = ir::Tensor::from_vector<float>(
        {static_cast<int64_t>(n.attr_floats("keys_floats").size())}, n.attr_floats("keys_floats"));
    ++nkeys;
  }
  if (const ir::Tensor* t = n.attr_tensor("keys_tensor")) {
    keys = *t;
    ++nkeys;
  }
  if (nkeys != 1)
    throw ModelError(n.describe() + ": LabelEncoder needs exactly one keys_* attribute");
  int nvals = 0;
  if (n.has_attr("values_strings")) {
    m->values = strings_tensor(n.attr_strings("values_strings"));
    m->def = ir::Tensor::from_strings({1}, {n.attr_string("default_string", "_Unused")});
    ++nvals;
  }
  if (n.has_attr("values_int64s")) {
    const auto v = n.attr_ints("values_int64s");
    m->values = ir::Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
    m->def = ir::Tensor::from_vector<int64_t>({1}, {n.attr_int("default_int64", -1)});
    ++nvals;
  }
  if (n.has_attr("values_floats")) {
    const auto v = n.attr_floats("values_floats");
    m->values = ir::Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
    m->def = ir::Tensor::from_vector<float>({1}, {n.attr_float("default_float", -0.0f)});
    ++nvals;
  }
  if (const ir::Tensor* t = n.attr_tensor("values_tensor")) {
    m->values = *t;
    if (const ir::Tensor* d = n.attr_tensor("default_tensor")) {
      if (d->dtype() != t->dtype() || d->numel() != 1)
        throw ModelError(n.describe() +
                         ": LabelEncoder default_tensor must hold one value of the values' dtype");
      m->def = *d;
    } else if (t->dtype() == DType::String) {
      m->def = ir::Tensor::from_strings({1}, {"_Unused"});
    } else {
      m->def = ir::Tensor::allocate(t->dtype(), {1});
      misc::write_f64(n, m->def, {key_kind(t->dtype()) == KeyKind::Float ? -0.0 : -1.0},
                      "LabelEncoder default");
    }
    ++nvals;
  }
  if (nvals != 1)
    throw ModelError(n.describe() + ": LabelEncoder needs exactly one values_* attribute");
  if (!label_dtype_ok(keys.dtype()) || !label_dtype_ok(m->values.dtype()))
    throw UnsupportedError(n.describe() + ": LabelEncoder keys " + ir::dtype_name(keys.dtype()) +
                           " / values " + ir::dtype_name(m->values.dtype()) +
                           " not supported; supported: string, i16, i32, i64, f32, f64");
  if (keys.numel() != m->values.numel())
    throw ModelError(n.describe() + ": LabelEncoder has " + std::to_string(keys.numel()) +
                     " keys and " + std::to_string(m->values.numel()) + " values");
  m->kind = key_kind(keys.dtype());
  m->key_dtype = keys.dtype();
  for (int64_t i = 0; i < keys.numel(); ++i) {
    switch (m->kind) {
      case KeyKind::String:
        m->by_string[keys.strings()[static_cast<size_t>(i)]] = i;
        break;
      case KeyKind::Int:
        m->by_int[label_int(keys, i)] = i;
        break;
      case KeyKind::Float: {
        const double v = label_num(keys, i);
        if (std::isnan(v))
          m->nan_index = i;
        else
          m->by_float[v] = i;
        break;
      }
    }
  }
  return m;
}

/// Copies element `src_i` of `src` (or of `def` when src_i < 0) to element i of `dst`.
void copy_label(const LabelMap& m, int64_t src_i, ir::Tensor& dst, int64_t i) {
  const ir::Tensor& src = src_i < 0 ? m.def : m.values;
  const int64_t k = src_i < 0 ? 0 : src_i;
  if (dst.dtype() == DType::String) {
    dst.mutable_strings()[static_cast<size_t>(i)] = src.strings()[static_cast<size_t>(k)];
    return;
  }
  const size_t es = ir::dtype_size(dst.dtype());
  std::memcpy(dst.mutable_raw() + i * es, src.raw() + k * es, es);
}

Kernel make_label_encoder(const ir::Node& node) {
  auto m = parse_label_encoder(node);
  const bool v1 = node.since_version == 1 ||
                  (node.has_attr("classes_strings") && !node.has_attr("keys_strings"));
  const int64_t v1_default_int = node.attr_int("default_int64", -1);
  return [m, v1, v1_default_int](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (v1) {
      if (x.dtype() == DType::String) {  // string -> class index
        ir::Tensor& y = ctx.alloc_output(0, DType::I64, x.dims());
        auto yd = y.mutable_data<int64_t>();
        for (int64_t i = 0; i < x.numel(); ++i) {
          const int64_t k = m->find_string(x.strings()[static_cast<size_t>(i)]);
          yd[static_cast<size_t>(i)] = k < 0 ? v1_default_int : k;
        }
      } else {  // class index -> string
        ir::Tensor& y = ctx.alloc_output(0, DType::String, x.dims());
        for (int64_t i = 0; i < x.numel(); ++i) copy_label(*m, m->find_int(label_int(x, i)), y, i);
      }
      return;
    }
    if (key_kind(x.dtype()) != m->kind || !label_dtype_ok(x.dtype()))
      throw ModelError(n.describe() + ": LabelEncoder input dtype " + ir::dtype_name(x.dtype()) +
                       " does not match the keys' dtype " + ir::dtype_name(m->key_dtype));
    ir::Tensor& y = ctx.alloc_output(0, m->values.dtype(), x.dims());
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t k = -1;
      switch (m->kind) {
        case KeyKind::String:
          k = m->find_string(x.strings()[static_cast<size_t>(i)]);
          break;
        case KeyKind::Int:
          k = m->find_int(label_int(x, i));
          break;
        case KeyKind::Float: {
          // Keys and input compared at the input's precision (an f32 key list against f64 data
          // compares the f32 values widened).
          k = m->find_float(label_num(x, i));
          break;
        }
      }
      copy_label(*m, k, y, i);
    }
  };
}

// ---------------------------------------------------------------------------- TreeEnsemble

enum Mode : uint8_t { kLeq = 0, kLt, kGte, kGt, kEq, kNeq, kMember };
enum Aggregate { kAverage = 0, kSum, kMin, kMax };
enum Post { kNone = 0, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

struct Ensemble {
  std::vector<double> splits;
  std::vector<int64_t> feature, true_id, false_id;
  std::vector<uint8_t> modes, true_leaf, false_leaf, missing_true;
  std::vector<std::vector<double>> members;  // per node (MEMBER nodes only)
  std::vector<int64_t> leaf_target;
  std::vector<double> leaf_weight;
  std::vector<int64_t> roots;
  int64_t n_targets = 0;
  int aggregate = kSum, post = kNone;

  /// Leaf reached from `root` for row x.
  int64_t leaf_of(const ir::Node& n, int64_t root, const double* x, int64_t nfeat) const {
    int64_t i = root;
    if (true_leaf[i] && false_leaf[i] && true_id[i] == false_id[i]) return true_id[i];
    for (size_t steps = 0; steps <= modes.size(); ++steps) {
      const int64_t f = feature[i];
      if (f < 0 || f >= nfeat)
        throw ModelError(n.describe() + ": TreeEnsemble node " + std::to_string(i) +
                         " reads feature " + std::to_string(f) + " of " + std::to_string(nfeat));
      const double v = x[f], s = splits[i];
      bool c;
      if (std::isnan(v) && missing_true[i])
        c = true;
      else
        switch (modes[i]) {
          case kLeq:
            c = v <= s;
            break;
          case kLt:
            c = v < s;
            break;
          case kGte:
            c = v >= s;
            break;
          case kGt:
            c = v > s;
            break;
          case kEq:
            c = v == s;
            break;
          case kNeq:
            c = v != s;
            break;
          default:
            c = std::binary_search(members[i].begin(), members[i].end(), v);
            break;
        }
      const bool leaf = c ? true_leaf[i] : false_leaf[i];
      const int64_t next = c ? true_id[i] : false_id[i];
      if (leaf) return next;
      i = next;
    }
    throw ModelError(n.describe() + ": TreeEnsemble tree at root " + std::to_string(root) +
                     " has a cycle");
  }
};

std::vector<double> attr_tensor_f64(const ir::Node& n, const char* name, bool required) {
  const ir::Tensor* t = n.attr_tensor(name);
  if (!t) {
    if (required)
      throw ModelError(n.describe() + ": TreeEnsemble needs the '" + std::string(name) +
                       "' attribute");
    return {};
  }
  return misc::read_f64(n, *t, name);
}

std::shared_ptr<const Ensemble> parse_ensemble(const ir::Node& n) {
  auto e = std::make_shared<Ensemble>();
  e->splits = attr_tensor_f64(n, "nodes_splits", true);
  e->feature = n.attr_ints("nodes_featureids");
  e->true_id = n.attr_ints("nodes_truenodeids");
  e->false_id = n.attr_ints("nodes_falsenodeids");
  for (int64_t v : n.attr_ints("nodes_trueleafs")) e->true_leaf.push_back(v != 0);
  for (int64_t v : n.attr_ints("nodes_falseleafs")) e->false_leaf.push_back(v != 0);
  for (double v : attr_tensor_f64(n, "nodes_modes", true))
    e->modes.push_back(static_cast<uint8_t>(v));
  e->leaf_target = n.attr_ints("leaf_targetids");
  e->leaf_weight = attr_tensor_f64(n, "leaf_weights", true);
  e->roots = n.attr_ints("tree_roots");
  e->n_targets = n.attr_int("n_targets", 0);
  e->aggregate = static_cast<int>(n.attr_int("aggregate_function", kSum));
  e->post = static_cast<int>(n.attr_int("post_transform", kNone));
  const size_t nn = e->modes.size();
  auto bad = [&](const std::string& what) {
    throw ModelError(n.describe() + ": TreeEnsemble " + what);
  };
  if (e->splits.size() != nn || e->feature.size() != nn || e->true_id.size() != nn ||
      e->false_id.size() != nn || e->true_leaf.size() != nn || e->false_leaf.size() != nn)
    bad("nodes_* attributes must all have the same length");
  const auto missing = n.attr_ints("nodes_missing_value_tracks_true");
  if (!missing.empty() && missing.size() != nn)
    bad("nodes_missing_value_tracks_true has the wrong length");
  e->missing_true.assign(nn, 0);
  for (size_t i = 0; i < missing.size(); ++i) e->missing_true[i] = missing[i] != 0;
  if (e->leaf_target.size() != e->leaf_weight.size())
    bad("leaf_targetids and leaf_weights differ in length");
  if (e->n_targets <= 0) bad("n_targets must be > 0");
  if (e->aggregate < kAverage || e->aggregate > kMax) bad("aggregate_function must be 0..3");
  if (e->post < kNone || e->post > kProbit) bad("post_transform must be 0..4");
  for (int64_t t : e->leaf_target)
    if (t < 0 || t >= e->n_targets)
      bad("leaf target id " + std::to_string(t) + " outside [0, n_targets)");
  const auto nl = static_cast<int64_t>(e->leaf_weight.size());
  for (size_t i = 0; i < nn; ++i) {
    if (e->modes[i] > kMember) bad("node mode " + std::to_string(e->modes[i]) + " is not 0..6");
    const int64_t lim_t = e->true_leaf[i] ? nl : static_cast<int64_t>(nn);
    const int64_t lim_f = e->false_leaf[i] ? nl : static_cast<int64_t>(nn);
    if (e->true_id[i] < 0 || e->true_id[i] >= lim_t || e->false_id[i] < 0 ||
        e->false_id[i] >= lim_f)
      bad("node " + std::to_string(i) + " branches outside the node/leaf lists");
  }
  for (int64_t r : e->roots)
    if (r < 0 || r >= static_cast<int64_t>(nn))
      bad("tree root " + std::to_string(r) + " outside the node list");
  // Member sets, NaN-delimited, in node order.
  const auto mv = attr_tensor_f64(n, "membership_values", false);
  e->members.resize(nn);
  size_t p = 0;
  for (size_t i = 0; i < nn; ++i) {
    if (e->modes[i] != kMember) continue;
    if (p >= mv.size()) bad("membership_values has fewer sets than BRANCH_MEMBER nodes");
    while (p < mv.size() && !std::isnan(mv[p])) e->members[i].push_back(mv[p++]);
    ++p;  // the NaN
    std::sort(e->members[i].begin(), e->members[i].end());
  }
  return e;
}

void post_transform(int post, double* s, int64_t k) {
  switch (post) {
    case kSoftmax:
    case kSoftmaxZero: {
      double mx = -INFINITY;
      for (int64_t j = 0; j < k; ++j)
        if (post == kSoftmax || s[j] != 0) mx = std::max(mx, s[j]);
      double sum = 0;
      for (int64_t j = 0; j < k; ++j) {
        if (post == kSoftmaxZero && s[j] == 0) continue;
        s[j] = std::exp(s[j] - mx);
        sum += s[j];
      }
      for (int64_t j = 0; j < k; ++j)
        if (!(post == kSoftmaxZero && s[j] == 0)) s[j] /= sum;
      break;
    }
    case kLogistic:
      for (int64_t j = 0; j < k; ++j) s[j] = 1.0 / (1.0 + std::exp(-s[j]));
      break;
    case kProbit:
      for (int64_t j = 0; j < k; ++j) s[j] = Eigen::numext::ndtri(s[j]);
      break;
    default:
      break;
  }
}

Kernel make_tree_ensemble(const ir::Node& node) {
  auto e = parse_ensemble(node);
  return [e](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.rank() != 1 && x.rank() != 2)
      throw ModelError(n.describe() + ": TreeEnsemble X must be [N, F] or [F]");
    const int64_t rows = x.rank() == 2 ? x.dims()[0] : 1;
    const int64_t nfeat = x.dims().back();
    const int64_t k = e->n_targets;
    std::vector<double> xv;
    ir::dispatch<DType::F32, DType::F64, DType::F16>(x.dtype(), n.describe() + ": TreeEnsemble",
                                                     [&](auto tag) {
                                                       using T = typename decltype(tag)::type;
                                                       for (T v : x.data<T>())
                                                         xv.push_back(misc::to_f64(v));
                                                     });
    double hi = std::numeric_limits<float>::max();
    if (x.dtype() == DType::F64) hi = std::numeric_limits<double>::max();
    if (x.dtype() == DType::F16) hi = 65504.0;
    std::vector<double> out(static_cast<size_t>(rows * k));
    const double init = e->aggregate == kMin ? hi : e->aggregate == kMax ? -hi : 0.0;
    const double ntrees = static_cast<double>(e->roots.size());
    ctx.parallel_for(rows, static_cast<int64_t>(e->roots.size()) * 8 + 1,
                     [&](int64_t b, int64_t end) {
                       for (int64_t r = b; r < end; ++r) {
                         double* s = out.data() + r * k;
                         std::fill(s, s + k, init);
                         for (int64_t root : e->roots) {
                           const int64_t leaf = e->leaf_of(n, root, xv.data() + r * nfeat, nfeat);
                           const double w = e->leaf_weight[static_cast<size_t>(leaf)];
                           double& t = s[e->leaf_target[static_cast<size_t>(leaf)]];
                           switch (e->aggregate) {
                             case kAverage:
                               t += w / ntrees;
                               break;
                             case kSum:
                               t += w;
                               break;
                             case kMin:
                               t = std::min(t, w);
                               break;
                             default:
                               t = std::max(t, w);
                               break;
                           }
                         }
                         post_transform(e->post, s, k);
                       }
                     });
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), {rows, k});
    misc::write_f64(n, y, out, "TreeEnsemble output");
  };
}

}  // namespace

void register_ml(KernelRegistry& r) {
  r.add("Binarizer", 1, 0, make_binarizer, kMl);
  r.add("ArrayFeatureExtractor", 1, 0, stateless(array_feature_extractor), kMl);
  r.add("LabelEncoder", 1, 0, make_label_encoder, kMl);
  r.add("TreeEnsemble", 5, 0, make_tree_ensemble, kMl);
}

}  // namespace mcc::backends::cpu
