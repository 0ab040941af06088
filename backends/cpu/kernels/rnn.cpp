// Recurrent layers.
//   LSTM opsets 1-22 (peepholes P, input_forget, clip, activations with activation_alpha/beta,
//        direction forward|reverse|bidirectional, sequence_lens, initial_h/initial_c, layout 0/1,
//        outputs Y, Y_h, Y_c).
//   GRU  opsets 1-22 (linear_before_reset, same options; outputs Y, Y_h).
//   RNN  opsets 1-22 (outputs Y, Y_h).
// dtypes: f32, f16, bf16 computed in f32; f64 computed in f64. The input projection of all time
// steps is one Eigen GEMM (split by rows across the pool); each step adds H_{t-1}·Rᵀ (Eigen GEMM)
// and applies the gate activations. Clip bounds every gate pre-activation to [-clip, clip].
// Not supported: opset-1 `output_sequence` (Y is always produced when asked for).
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/control_kernels.h"
#include "backends/cpu/kernels/kernel_util.h"

namespace mcc::backends::cpu {
namespace {

using ir::DType;

enum class Cell { Lstm, Gru, Rnn };
enum class Act { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };

struct Activation {
  Act kind = Act::Sigmoid;
  double alpha = 0, beta = 0;

  template <class S>
  void apply(S* p, int64_t n) const {
    const S a = static_cast<S>(alpha), b = static_cast<S>(beta);
    switch (kind) {
      case Act::Relu: for (int64_t i = 0; i < n; ++i) p[i] = std::max<S>(p[i], 0); break;
      case Act::Tanh: for (int64_t i = 0; i < n; ++i) p[i] = std::tanh(p[i]); break;
      case Act::Sigmoid: for (int64_t i = 0; i < n; ++i) p[i] = S(1) / (S(1) + std::exp(-p[i])); break;
      case Act::Affine: for (int64_t i = 0; i < n; ++i) p[i] = a * p[i] + b; break;
      case Act::LeakyRelu: for (int64_t i = 0; i < n; ++i) p[i] = p[i] >= 0 ? p[i] : a * p[i]; break;
      case Act::ThresholdedRelu: for (int64_t i = 0; i < n; ++i) p[i] = p[i] > a ? p[i] : S(0); break;
      case Act::ScaledTanh: for (int64_t i = 0; i < n; ++i) p[i] = a * std::tanh(b * p[i]); break;
      case Act::HardSigmoid:
        for (int64_t i = 0; i < n; ++i) p[i] = std::min<S>(S(1), std::max<S>(S(0), a * p[i] + b));
        break;
      case Act::Elu: for (int64_t i = 0; i < n; ++i) p[i] = p[i] >= 0 ? p[i] : a * (std::exp(p[i]) - S(1)); break;
      case Act::Softsign: for (int64_t i = 0; i < n; ++i) p[i] = p[i] / (S(1) + std::fabs(p[i])); break;
      case Act::Softplus: for (int64_t i = 0; i < n; ++i) p[i] = std::log1p(std::exp(p[i])); break;
    }
  }
};

// Parses the activation list; alphas/betas are consumed in order by the functions that take them
// (as ONNX Runtime does), defaults otherwise.
std::vector<Activation> parse_activations(const ir::Node& n, const std::vector<std::string>& names) {
  const auto alphas = n.attr_floats("activation_alpha");
  const auto betas = n.attr_floats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& raw : names) {
    std::string s;
    for (char c : raw) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    Activation a;
    double def_a = 0, def_b = 0;
    bool uses_a = false, uses_b = false;
    if (s == "relu") a.kind = Act::Relu;
    else if (s == "tanh") a.kind = Act::Tanh;
    else if (s == "sigmoid") a.kind = Act::Sigmoid;
    else if (s == "affine") { a.kind = Act::Affine; uses_a = uses_b = true; def_a = 1; def_b = 0; }
    else if (s == "leakyrelu") { a.kind = Act::LeakyRelu; uses_a = true; def_a = 0.01; }
    else if (s == "thresholdedrelu") { a.kind = Act::ThresholdedRelu; uses_a = true; def_a = 1; }
    else if (s == "scaledtanh") { a.kind = Act::ScaledTanh; uses_a = uses_b = true; def_a = 1; def_b = 1; }
    else if (s == "hardsigmoid") { a.kind = Act::HardSigmoid; uses_a = uses_b = true; def_a = 0.2; def_b = 0.5; }
    else if (s == "elu") { a.kind = Act::Elu; uses_a = true; def_a = 1; }
    else if (s == "softsign") a.kind = Act::Softsign;
    else if (s == "softplus") a.kind = Act::Softplus;
    else throw UnsupportedError(n.describe() + ": " + n.op_type + ": activation '" + raw + "' is not supported");
    a.alpha = uses_a ? (ai < alphas.size() ? alphas[ai++] : def_a) : 0;
    a.beta = uses_b ? (bi < betas.size() ? betas[bi++] : def_b) : 0;
    out.push_back(a);
  }
  return out;
}

struct RnnAttrs {
  Cell cell;
  int64_t hidden = 0, num_dir = 1, layout = 0, gates = 1, acts_per_dir = 1;
  bool reverse_only = false, input_forget = false, linear_before_reset = false;
  double clip = 0;  // 0 = none
  std::vector<Activation> acts;  // acts_per_dir x num_dir
};

template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using MapC = Eigen::Map<const Mat<S>>;
template <class S>
using MapM = Eigen::Map<Mat<S>>;

template <class S>
std::vector<S> load(const ir::Node& n, const ir::Tensor& t, const char* what) {
  std::vector<S> out(static_cast<size_t>(t.numel()));
  ir::dispatch<MCC_FLOAT_DTYPES>(t.dtype(), n.describe() + ": " + what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto d = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, double>) out[i] = static_cast<S>(d[i]);
      else out[i] = static_cast<S>(static_cast<float>(d[i]));
    }
  });
  return out;
}

// t's elements as S: t's own bytes when it already holds S (weights are read every run; a copy
// per run cost more than the cell on small layers), else a converted copy.
template <class S>
struct AsS {
  std::vector<S> copy;
  const S* data = nullptr;
};

template <class S>
AsS<S> as_s(const ir::Node& n, const ir::Tensor& t, const char* what) {
  AsS<S> r;
  if (t.dtype() == ir::dtype_of<S>()) {
    r.data = t.data<S>().data();
    return r;
  }
  r.copy = load<S>(n, t, what);
  r.data = r.copy.data();
  return r;
}

void check_dims(const ir::Node& n, const ir::Tensor& t, const std::vector<int64_t>& want, const char* what) {
  if (t.dims() != want) {
    auto fmt = [](const std::vector<int64_t>& v) {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
      return s + "]";
    };
    throw ModelError(n.describe() + ": " + what + " has shape " + fmt(t.dims()) + ", expected " + fmt(want));
  }
}

// Swaps the first two axes of a [a, b, rest] buffer.
template <class S>
std::vector<S> swap01(const std::vector<S>& in, int64_t a, int64_t b, int64_t rest) {
  std::vector<S> out(in.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      std::copy_n(in.begin() + (i * b + j) * rest, rest, out.begin() + (j * a + i) * rest);
  return out;
}

template <class S>
void run_rnn(KernelContext& ctx, const RnnAttrs& at, DType out_dt) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& xt = ctx.in(0);
  if (xt.rank() != 3) throw ModelError(n.describe() + ": X must be rank 3");
  if (ctx.in(1).rank() != 3 || ctx.in(2).rank() != 3) throw ModelError(n.describe() + ": W and R must be rank 3");
  const int64_t T = at.layout ? xt.dims()[1] : xt.dims()[0];
  const int64_t B = at.layout ? xt.dims()[0] : xt.dims()[1];
  const int64_t I = xt.dims()[2];
  const int64_t H = at.hidden > 0 ? at.hidden : ctx.in(2).dims().back();
  const int64_t G = at.gates, GH = G * H, ND = at.num_dir;
  check_dims(n, ctx.in(1), {ND, GH, I}, "W");
  check_dims(n, ctx.in(2), {ND, GH, H}, "R");

  std::vector<S> X = load<S>(n, xt, "X");
  if (at.layout) X = swap01(X, B, T, I);
  const AsS<S> W = as_s<S>(n, ctx.in(1), "W");
  const AsS<S> R = as_s<S>(n, ctx.in(2), "R");
  AsS<S> Bias;
  if (ctx.has_input(3)) {
    check_dims(n, ctx.in(3), {ND, 2 * GH}, "B");
    Bias = as_s<S>(n, ctx.in(3), "B");
  } else {
    Bias.copy.assign(static_cast<size_t>(ND * 2 * GH), S(0));
    Bias.data = Bias.copy.data();
  }
  std::vector<int64_t> lens(static_cast<size_t>(B), T);
  if (ctx.has_input(4)) {
    lens = read_int_tensor(n, ctx.in(4), "sequence_lens");
    if (static_cast<int64_t>(lens.size()) != B) throw ModelError(n.describe() + ": sequence_lens must have batch_size entries");
    for (int64_t l : lens)
      if (l < 0 || l > T) throw ModelError(n.describe() + ": sequence_lens value " + std::to_string(l) + " is outside [0, " + std::to_string(T) + "]");
  }
  auto load_state = [&](size_t idx, const char* what) {
    std::vector<S> s(static_cast<size_t>(ND * B * H), S(0));
    if (!ctx.has_input(idx)) return s;
    check_dims(n, ctx.in(idx), at.layout ? std::vector<int64_t>{B, ND, H} : std::vector<int64_t>{ND, B, H}, what);
    s = load<S>(n, ctx.in(idx), what);
    if (at.layout) s = swap01(s, B, ND, H);
    return s;
  };
  std::vector<S> Hs = load_state(5, "initial_h");
  std::vector<S> Cs;
  std::vector<S> P;
  if (at.cell == Cell::Lstm) {
    Cs = load_state(6, "initial_c");
    P.assign(static_cast<size_t>(ND * 3 * H), S(0));
    if (ctx.has_input(7)) { check_dims(n, ctx.in(7), {ND, 3 * H}, "P"); P = load<S>(n, ctx.in(7), "P"); }
  }

  std::vector<S> Y(static_cast<size_t>(T * ND * B * H), S(0));  // layout 0: [T, ND, B, H]
  const S clip = static_cast<S>(at.clip);
  auto do_clip = [&](S* p, int64_t cnt) {
    if (at.clip > 0) for (int64_t i = 0; i < cnt; ++i) p[i] = std::min(clip, std::max(-clip, p[i]));
  };

  Mat<S> XW(T * B, GH), HR(B, GH), gates(B, GH), tmp(B, H);
  for (int64_t d = 0; d < ND; ++d) {
    const bool reverse = at.reverse_only || d == 1;
    MapC<S> Wd(W.data + d * GH * I, GH, I);
    MapC<S> Rd(R.data + d * GH * H, GH, H);
    const S* wb = Bias.data + d * 2 * GH;
    const S* rb = wb + GH;
    // Input projection of every step at once: XW = X·Wᵀ + Wb (+ Rb where it is outside the gates).
    MapC<S> Xm(X.data(), T * B, I);
    ctx.parallel_for(T * B, GH * I, [&](int64_t b0, int64_t b1) {
      XW.middleRows(b0, b1 - b0).noalias() = Xm.middleRows(b0, b1 - b0) * Wd.transpose();
      for (int64_t r = b0; r < b1; ++r) {
        S* row = XW.data() + r * GH;
        for (int64_t j = 0; j < GH; ++j) {
          const bool rb_inside = at.cell == Cell::Gru && at.linear_before_reset && j >= 2 * H;
          row[j] += wb[j] + (rb_inside ? S(0) : rb[j]);
        }
      }
    });
    MapM<S> Hm(Hs.data() + d * B * H, B, H);
    S* C = at.cell == Cell::Lstm ? Cs.data() + d * B * H : nullptr;
    const Activation* act = at.acts.data() + d * at.acts_per_dir;
    const S* pi = P.empty() ? nullptr : P.data() + d * 3 * H;

    for (int64_t s = 0; s < T; ++s) {
      if (at.cell == Cell::Gru && !at.linear_before_reset) {
        HR.leftCols(2 * H).noalias() = Hm * Rd.topRows(2 * H).transpose();
      } else {
        HR.noalias() = Hm * Rd.transpose();
      }
      for (int64_t b = 0; b < B; ++b) {
        if (s >= lens[b]) continue;
        const int64_t t = reverse ? lens[b] - 1 - s : s;
        S* g = gates.data() + b * GH;
        const S* xw = XW.data() + (t * B + b) * GH;
        const S* hr = HR.data() + b * GH;
        S* h = Hm.data() + b * H;
        if (at.cell == Cell::Lstm) {
          for (int64_t j = 0; j < GH; ++j) g[j] = xw[j] + hr[j];
          S* gi = g; S* go = g + H; S* gf = g + 2 * H; S* gc = g + 3 * H;
          S* c = C + b * H;
          if (pi) for (int64_t j = 0; j < H; ++j) { gi[j] += pi[j] * c[j]; gf[j] += pi[2 * H + j] * c[j]; }
          do_clip(gi, H); act[0].apply(gi, H);
          if (at.input_forget) for (int64_t j = 0; j < H; ++j) gf[j] = S(1) - gi[j];
          else { do_clip(gf, H); act[0].apply(gf, H); }
          do_clip(gc, H); act[1].apply(gc, H);
          for (int64_t j = 0; j < H; ++j) c[j] = gf[j] * c[j] + gi[j] * gc[j];
          if (pi) for (int64_t j = 0; j < H; ++j) go[j] += pi[H + j] * c[j];
          do_clip(go, H); act[0].apply(go, H);
          S* hc = tmp.data() + b * H;
          std::copy_n(c, H, hc);
          act[2].apply(hc, H);
          for (int64_t j = 0; j < H; ++j) h[j] = go[j] * hc[j];
        } else if (at.cell == Cell::Gru) {
          for (int64_t j = 0; j < 2 * H; ++j) g[j] = xw[j] + hr[j];
          S* z = g; S* r = g + H; S* hh = g + 2 * H;
          do_clip(g, 2 * H); act[0].apply(g, 2 * H);
          if (at.linear_before_reset) {
            for (int64_t j = 0; j < H; ++j) hh[j] = xw[2 * H + j] + r[j] * (hr[2 * H + j] + rb[2 * H + j]);
          } else {
            // (r ⊙ H_{t-1})·Rhᵀ for this row.
            S* rh = tmp.data() + b * H;
            for (int64_t j = 0; j < H; ++j) rh[j] = r[j] * h[j];
            Eigen::Map<Eigen::Matrix<S, 1, Eigen::Dynamic>> out(hh, H);
            out.noalias() = Eigen::Map<const Eigen::Matrix<S, 1, Eigen::Dynamic>>(rh, H) *
                            Rd.bottomRows(H).transpose();
            for (int64_t j = 0; j < H; ++j) hh[j] += xw[2 * H + j];
          }
          do_clip(hh, H); act[1].apply(hh, H);
          for (int64_t j = 0; j < H; ++j) h[j] = (S(1) - z[j]) * hh[j] + z[j] * h[j];
        } else {
          for (int64_t j = 0; j < H; ++j) g[j] = xw[j] + hr[j];
          do_clip(g, H); act[0].apply(g, H);
          std::copy_n(g, H, h);
        }
        std::copy_n(h, H, Y.data() + ((t * ND + d) * B + b) * H);
      }
    }
  }

  auto store = [&](size_t idx, const std::vector<S>& v, std::vector<int64_t> dims) {
    if (!ctx.wants_output(idx)) return;
    ir::Tensor& o = ctx.alloc_output(idx, out_dt, std::move(dims));
    ir::dispatch<MCC_FLOAT_DTYPES>(out_dt, n.describe() + ": output", [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto od = o.mutable_data<T>();
      for (size_t i = 0; i < v.size(); ++i) od[i] = static_cast<T>(v[i]);
    });
  };
  if (at.layout) {
    std::vector<S> yl(Y.size());  // [T, ND, B, H] -> [B, T, ND, H]
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < ND; ++d)
        for (int64_t b = 0; b < B; ++b)
          std::copy_n(Y.begin() + ((t * ND + d) * B + b) * H, H, yl.begin() + ((b * T + t) * ND + d) * H);
    store(0, yl, {B, T, ND, H});
    store(1, swap01(Hs, ND, B, H), {B, ND, H});
    if (at.cell == Cell::Lstm) store(2, swap01(Cs, ND, B, H), {B, ND, H});
  } else {
    store(0, Y, {T, ND, B, H});
    store(1, Hs, {ND, B, H});
    if (at.cell == Cell::Lstm) store(2, Cs, {ND, B, H});
  }
}

KernelFactory make_rnn(Cell cell) {
  return [cell](const ir::Node& n) -> Kernel {
    RnnAttrs at;
    at.cell = cell;
    at.gates = cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
    at.acts_per_dir = cell == Cell::Lstm ? 3 : cell == Cell::Gru ? 2 : 1;
    at.hidden = n.attr_int("hidden_size", 0);
    at.layout = n.attr_int("layout", 0);
    if (at.layout != 0 && at.layout != 1) throw ModelError(n.describe() + ": layout must be 0 or 1");
    at.clip = n.attr_float("clip", 0.f);
    if (n.has_attr("clip") && at.clip <= 0) throw ModelError(n.describe() + ": clip must be positive");
    at.input_forget = n.attr_int("input_forget", 0) != 0;
    at.linear_before_reset = n.attr_int("linear_before_reset", 0) != 0;
    const std::string dir = n.attr_string("direction", "forward");
    if (dir == "bidirectional") at.num_dir = 2;
    else if (dir == "reverse") at.reverse_only = true;
    else if (dir != "forward") throw ModelError(n.describe() + ": direction '" + dir + "' is not forward, reverse or bidirectional");
    std::vector<std::string> names = n.attr_strings("activations");
    if (names.empty()) {
      const std::vector<std::string> def = cell == Cell::Lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                           : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                               : std::vector<std::string>{"Tanh"};
      for (int64_t d = 0; d < at.num_dir; ++d) names.insert(names.end(), def.begin(), def.end());
    } else if (static_cast<int64_t>(names.size()) == at.acts_per_dir && at.num_dir == 2) {
      std::vector<std::string> twice = names;
      names.insert(names.end(), twice.begin(), twice.end());
    }
    if (static_cast<int64_t>(names.size()) != at.acts_per_dir * at.num_dir)
      throw ModelError(n.describe() + ": expected " + std::to_string(at.acts_per_dir * at.num_dir) +
                       " activations, got " + std::to_string(names.size()));
    at.acts = parse_activations(n, names);
    return [at](KernelContext& ctx) {
      const DType dt = ctx.in(0).dtype();
      ir::dispatch<MCC_FLOAT_DTYPES>(dt, ctx.node().describe() + ": X", [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_rnn<std::conditional_t<std::is_same_v<T, double>, double, float>>(ctx, at, dt);
      });
    };
  };
}

}  // namespace

void register_rnn(KernelRegistry& r) {
  r.add("LSTM", 1, 0, make_rnn(Cell::Lstm));
  r.add("GRU", 1, 0, make_rnn(Cell::Gru));
  r.add("RNN", 1, 0, make_rnn(Cell::Rnn));
}

}  // namespace mcc::backends::cpu
