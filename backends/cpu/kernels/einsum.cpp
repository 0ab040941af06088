// Einsum (opsets 12+): explicit and implicit output, ellipsis (broadcast batch dims), repeated
// subscripts within an operand (diagonals), any number of operands.
// dtypes: f32, f64, f16, bf16 (f16/bf16 computed in f32), all integer types (computed in int64,
// wrapping as the storage type would).
// Algorithm: per operand take diagonals and sum out subscripts used nowhere else; then contract
// operands left to right, each pair as a batched GEMM [batch, m, k] x [batch, k, n] (Eigen, split
// over the pool); finally sum out what the output does not keep and transpose to its order.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/conv_util.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/nn_register.h"
#include "ir/errors.h"

namespace mcc::backends::cpu {

namespace {

constexpr int kEllipsisLabel = 256;  // labels of ellipsis dims: 256 + position in the ellipsis

struct Equation {
  std::vector<std::string> inputs;  // raw terms
  std::string output;
  bool explicit_output = false;
};

Equation parse_equation(const ir::Node& n, const std::string& eq) {
  std::string s;
  for (char c : eq)
    if (c != ' ') s += c;
  Equation e;
  const auto arrow = s.find("->");
  const std::string lhs = arrow == std::string::npos ? s : s.substr(0, arrow);
  if (arrow != std::string::npos) {
    e.explicit_output = true;
    e.output = s.substr(arrow + 2);
  }
  size_t start = 0;
  while (true) {
    const auto comma = lhs.find(',', start);
    e.inputs.push_back(
        lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  auto check = [&](const std::string& t) {
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.compare(i, 3, "...") == 0) {
        i += 2;
        continue;
      }
      if (!std::isalpha(static_cast<unsigned char>(t[i])))
        throw ModelError(n.describe() + ": invalid character '" + std::string(1, t[i]) +
                         "' in einsum equation '" + eq + "'");
    }
  };
  for (const auto& t : e.inputs) check(t);
  check(e.output);
  return e;
}

// Labels of a term for an operand of `rank` dims; ellipsis dims are right-aligned within `ell`.
std::vector<int> term_labels(const ir::Node& n, const std::string& t, int64_t rank,
                             int64_t& ell_rank) {
  std::vector<int> letters;
  int64_t ell_pos = -1;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.compare(i, 3, "...") == 0) {
      if (ell_pos >= 0)
        throw ModelError(n.describe() + ": more than one ellipsis in an einsum term");
      ell_pos = static_cast<int64_t>(letters.size());
      i += 2;
    } else {
      letters.push_back(static_cast<unsigned char>(t[i]));
    }
  }
  const auto nl = static_cast<int64_t>(letters.size());
  if (ell_pos < 0) {
    if (nl != rank)
      throw ModelError(n.describe() + ": einsum term '" + t + "' has " + std::to_string(nl) +
                       " subscripts for a rank-" + std::to_string(rank) + " input");
    ell_rank = 0;
    return letters;
  }
  if (nl > rank)
    throw ModelError(n.describe() + ": einsum term '" + t +
                     "' has more subscripts than the input's rank");
  ell_rank = rank - nl;
  std::vector<int> out(letters.begin(), letters.begin() + ell_pos);
  for (int64_t j = 0; j < ell_rank; ++j)
    out.push_back(-1 - static_cast<int>(j));  // fixed up once max ellipsis known
  out.insert(out.end(), letters.begin() + ell_pos, letters.end());
  return out;
}

template <class A>
struct Operand {
  std::vector<A> data;
  std::vector<int> labels;
  std::vector<int64_t> dims;
};

template <class A>
Operand<A> materialize(const Operand<A>& x, const std::vector<int64_t>& strides,
                       std::vector<int> labels, std::vector<int64_t> dims) {
  Operand<A> r;
  r.labels = std::move(labels);
  r.dims = std::move(dims);
  int64_t total = 1;
  for (int64_t d : r.dims) total *= d;
  r.data.resize(static_cast<size_t>(total));
  for_each_broadcast(r.dims, {strides}, [&](int64_t i, int64_t o, int64_t, int64_t) {
    r.data[static_cast<size_t>(i)] = x.data[static_cast<size_t>(o)];
  });
  return r;
}

// Repeated labels -> their diagonal, unique labels in first-occurrence order.
template <class A>
Operand<A> diagonal(const ir::Node& n, Operand<A> x) {
  const auto cs = contiguous_strides(x.dims);
  std::vector<int> labels;
  std::vector<int64_t> dims, strides;
  for (size_t i = 0; i < x.labels.size(); ++i) {
    const auto it = std::find(labels.begin(), labels.end(), x.labels[i]);
    if (it == labels.end()) {
      labels.push_back(x.labels[i]);
      dims.push_back(x.dims[i]);
      strides.push_back(cs[i]);
    } else {
      const auto k = static_cast<size_t>(it - labels.begin());
      if (dims[k] != x.dims[i])
        throw ModelError(n.describe() + ": einsum repeated subscript with different dims");
      strides[k] += cs[i];
    }
  }
  if (labels.size() == x.labels.size()) return x;
  return materialize(x, strides, labels, dims);
}

// x with its dims in `order` (every label of x must appear; others broadcast), sized per `size`.
template <class A>
Operand<A> permute(const Operand<A>& x, const std::vector<int>& order,
                   const std::map<int, int64_t>& size) {
  bool same = order == x.labels;
  for (size_t i = 0; same && i < order.size(); ++i) same = x.dims[i] == size.at(order[i]);
  if (same) return x;
  const auto cs = contiguous_strides(x.dims);
  std::vector<int64_t> dims, strides;
  for (int l : order) {
    const auto it = std::find(x.labels.begin(), x.labels.end(), l);
    const int64_t want = size.at(l);
    dims.push_back(want);
    if (it == x.labels.end()) {
      strides.push_back(0);
      continue;
    }
    const auto k = static_cast<size_t>(it - x.labels.begin());
    strides.push_back(x.dims[k] == 1 && want != 1 ? 0 : cs[k]);
  }
  return materialize(x, strides, order, dims);
}

// Sums out every label of x not in `keep` (kept labels stay in x's order).
template <class A>
Operand<A> sum_out(const Operand<A>& x, const std::vector<int>& keep) {
  std::vector<int> kept, summed;
  for (int l : x.labels)
    (std::find(keep.begin(), keep.end(), l) != keep.end() ? kept : summed).push_back(l);
  if (summed.empty()) return x;
  std::vector<int> order = kept;
  order.insert(order.end(), summed.begin(), summed.end());
  std::map<int, int64_t> own;
  for (size_t i = 0; i < x.labels.size(); ++i) own[x.labels[i]] = x.dims[i];
  const Operand<A> p = permute(x, order, own);
  int64_t inner = 1;
  for (int l : summed) inner *= own[l];
  Operand<A> r;
  r.labels = kept;
  for (int l : kept) r.dims.push_back(own[l]);
  int64_t total = 1;
  for (int64_t d : r.dims) total *= d;
  r.data.assign(static_cast<size_t>(total), A(0));
  for (int64_t o = 0; o < total && inner > 0; ++o) {
    A s = 0;
    for (int64_t i = 0; i < inner; ++i) s += p.data[static_cast<size_t>(o * inner + i)];
    r.data[static_cast<size_t>(o)] = s;
  }
  return r;
}

bool contains(const std::vector<int>& v, int l) {
  return std::find(v.begin(), v.end(), l) != v.end();
}

template <class A>
Operand<A> contract(const KernelContext& ctx, const Operand<A>& a, const Operand<A>& b,
                    const std::vector<int>& keep, const std::map<int, int64_t>& size) {
  std::vector<int> batch, ka, kb, kc;  // batch, a-only, b-only, contracted
  for (int l : a.labels) {
    if (contains(b.labels, l))
      (contains(keep, l) ? batch : kc).push_back(l);
    else
      ka.push_back(l);
  }
  for (int l : b.labels)
    if (!contains(a.labels, l)) kb.push_back(l);
  auto prod = [&](const std::vector<int>& ls) {
    int64_t p = 1;
    for (int l : ls) p *= size.at(l);
    return p;
  };
  const int64_t B = prod(batch), M = prod(ka), N = prod(kb), K = prod(kc);
  std::vector<int> oa = batch, ob = batch;
  oa.insert(oa.end(), ka.begin(), ka.end());
  oa.insert(oa.end(), kc.begin(), kc.end());
  ob.insert(ob.end(), kc.begin(), kc.end());
  ob.insert(ob.end(), kb.begin(), kb.end());
  const Operand<A> pa = permute(a, oa, size), pb = permute(b, ob, size);
  Operand<A> r;
  r.labels = batch;
  r.labels.insert(r.labels.end(), ka.begin(), ka.end());
  r.labels.insert(r.labels.end(), kb.begin(), kb.end());
  for (int l : r.labels) r.dims.push_back(size.at(l));
  r.data.assign(static_cast<size_t>(B * M * N), A(0));
  for (int64_t i = 0; i < B; ++i)
    gemm_parallel<A>(ctx, M, N, K, pa.data.data() + i * M * K, K, false, pb.data.data() + i * K * N,
                     N, false, r.data.data() + i * M * N, N, false);
  return r;
}

template <class T>
using einsum_acc_t = std::conditional_t<std::is_same_v<T, double>, double,
                                        std::conditional_t<std::is_integral_v<T>, int64_t, float>>;

Kernel make_einsum(const ir::Node& node) {
  const std::string eq_text = node.attr_string("equation", "");
  const Equation eq = parse_equation(node, eq_text);
  return [eq, eq_text](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    if (eq.inputs.size() != ctx.num_inputs())
      throw ModelError(n.describe() + ": einsum equation '" + eq_text + "' has " +
                       std::to_string(eq.inputs.size()) + " terms for " +
                       std::to_string(ctx.num_inputs()) + " inputs");
    const ir::DType dt = ctx.in(0).dtype();
    std::vector<std::vector<int>> labels(eq.inputs.size());
    int64_t max_ell = 0;
    std::vector<int64_t> ell_ranks(eq.inputs.size());
    for (size_t i = 0; i < eq.inputs.size(); ++i) {
      if (ctx.in(i).dtype() != dt)
        throw ModelError(n.describe() + ": einsum inputs must share one dtype");
      labels[i] =
          term_labels(n, eq.inputs[i], static_cast<int64_t>(ctx.in(i).rank()), ell_ranks[i]);
      max_ell = std::max(max_ell, ell_ranks[i]);
    }
    // Ellipsis dims right-aligned against the widest ellipsis.
    for (size_t i = 0; i < labels.size(); ++i)
      for (int& l : labels[i])
        if (l < 0) l = kEllipsisLabel + static_cast<int>(max_ell - ell_ranks[i]) + (-1 - l);
    std::map<int, int64_t> size;
    std::map<int, int> count;
    for (size_t i = 0; i < labels.size(); ++i)
      for (size_t k = 0; k < labels[i].size(); ++k) {
        const int l = labels[i][k];
        const int64_t d = ctx.in(i).dims()[k];
        auto it = size.find(l);
        if (it == size.end() || it->second == 1)
          size[l] = d;
        else if (d != 1 && d != it->second)
          throw ModelError(n.describe() + ": einsum subscript dims do not match (" +
                           std::to_string(d) + " vs " + std::to_string(it->second) + ")");
        ++count[l];
      }
    std::vector<int> out_labels;
    if (eq.explicit_output) {
      for (size_t i = 0; i < eq.output.size(); ++i) {
        if (eq.output.compare(i, 3, "...") == 0) {
          for (int64_t j = 0; j < max_ell; ++j)
            out_labels.push_back(kEllipsisLabel + static_cast<int>(j));
          i += 2;
        } else {
          const int l = static_cast<unsigned char>(eq.output[i]);
          if (!size.count(l))
            throw ModelError(n.describe() + ": einsum output subscript '" +
                             std::string(1, eq.output[i]) + "' is not in any input");
          out_labels.push_back(l);
        }
      }
    } else {
      for (int64_t j = 0; j < max_ell; ++j)
        out_labels.push_back(kEllipsisLabel + static_cast<int>(j));
      for (const auto& [l, c] : count)
        if (l < kEllipsisLabel && c == 1) out_labels.push_back(l);
    }
    std::vector<int64_t> out_dims;
    for (int l : out_labels) out_dims.push_back(size.at(l));
    ir::Tensor& y = ctx.alloc_output(0, dt, out_dims);
    ir::dispatch<MCC_NUMERIC_DTYPES>(dt, n.describe() + ": Einsum", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = einsum_acc_t<T>;
      std::vector<Operand<A>> ops(labels.size());
      for (size_t i = 0; i < ops.size(); ++i) {
        const auto d = ctx.in(i).data<T>();
        ops[i].data.resize(d.size());
        for (size_t k = 0; k < d.size(); ++k) {
          if constexpr (std::is_arithmetic_v<T>)
            ops[i].data[k] = static_cast<A>(d[k]);
          else
            ops[i].data[k] = static_cast<A>(static_cast<float>(d[k]));
        }
        ops[i].labels = labels[i];
        ops[i].dims = ctx.in(i).dims();
        ops[i] = diagonal(n, std::move(ops[i]));
      }
      // Labels still needed after operand i: the output's and those of later operands.
      auto needed_after = [&](size_t i) {
        std::vector<int> keep = out_labels;
        for (size_t j = i + 1; j < ops.size(); ++j)
          keep.insert(keep.end(), ops[j].labels.begin(), ops[j].labels.end());
        return keep;
      };
      auto needed_besides = [&](size_t i, const Operand<A>& cur) {
        std::vector<int> keep = needed_after(i);
        keep.insert(keep.end(), cur.labels.begin(), cur.labels.end());
        return keep;
      };
      Operand<A> acc = sum_out(ops[0], ops.size() > 1 ? needed_after(0) : out_labels);
      for (size_t i = 1; i < ops.size(); ++i) {
        const Operand<A> cur = sum_out(ops[i], needed_besides(i, acc));
        acc = contract(ctx, acc, cur, needed_after(i), size);
      }
      acc = sum_out(acc, out_labels);
      acc = permute(acc, out_labels, size);
      auto o = y.mutable_data<T>();
      for (size_t k = 0; k < o.size(); ++k) {
        if constexpr (std::is_arithmetic_v<T>)
          o[k] = static_cast<T>(acc.data[k]);
        else
          o[k] = T(static_cast<float>(acc.data[k]));
      }
    });
  };
}

}  // namespace

void register_einsum(KernelRegistry& r) { r.add("Einsum", 12, 0, make_einsum); }

}  // namespace mcc::backends::cpu
