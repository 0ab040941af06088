// Attention (opset 23+): scaled dot-product attention on 3-D ([B, S, H * d], with q_num_heads /
// kv_num_heads) or 4-D ([B, H, S, d]) Q/K/V; grouped-query attention (query head h reads kv head
// h / (Hq / Hkv)); past_key/past_value concatenated into present_key/present_value; boolean or
// additive attn_mask broadcast to [B, Hq, Sq, T] (a mask shorter than T masks the rest); is_causal
// aligned bottom-right (query i sees key j iff j <= i + past length); softcap before the mask;
// qk_matmul_output modes 0/1 (scores after softcap), 2 (after the mask) and 3 (probabilities).
// A row whose mask blocks every key gives zero probabilities and a zero output row.
// dtypes: f32, f64, f16, bf16 (f16/bf16 computed in f32; f64 in f64); the QK and PV products use
// Eigen GEMM, parallel over (batch, head).
// RotaryEmbedding (opset 23): 3-D/4-D input, interleaved or half-split rotation, partial
// rotary_embedding_dim, caches indexed by position_ids or given per position; f32 math.
// LinearAttention (opset 27): linear / gated / delta / gated_delta recurrent state updates with
// GQA, past_state and present_state; f64 state math, f32 inputs.
// FlexAttention (ai.onnx.preview 1): score_mod / prob_mod subgraphs around the softmax, GQA;
// f32 scores (f64 for f64).
// nonpad_kv_seqlen (opset 24) masks padded keys per batch. Not supported: sliding windows.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/nn_register.h"
#include "ir/errors.h"

namespace mcc::backends::cpu {

namespace {

struct AttentionAttrs {
  bool causal = false;
  int64_t q_heads = 0, kv_heads = 0, mode = 0;
  float scale = 0.f, softcap = 0.f;
  bool has_scale = false;
};

template <class A, class T>
std::vector<A> load(const ir::Tensor& t) {
  std::vector<A> v;
  v.reserve(static_cast<size_t>(t.numel()));
  for (T e : t.data<T>()) v.push_back(static_cast<A>(static_cast<float>(e)));
  return v;
}

template <>
std::vector<double> load<double, double>(const ir::Tensor& t) {
  auto d = t.data<double>();
  return {d.begin(), d.end()};
}

// [B, S, H * d] -> [B, H, S, d].
template <class A>
std::vector<A> to_heads(const std::vector<A>& v, int64_t B, int64_t S, int64_t H, int64_t d) {
  std::vector<A> o(v.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        std::copy_n(v.begin() + ((b * S + s) * H + h) * d, d,
                    o.begin() + ((b * H + h) * S + s) * d);
  return o;
}

Kernel make_attention(const ir::Node& node) {
  AttentionAttrs a;
  a.causal = node.attr_int("is_causal", 0) != 0;
  a.q_heads = node.attr_int("q_num_heads", 0);
  a.kv_heads = node.attr_int("kv_num_heads", 0);
  a.mode = node.attr_int("qk_matmul_output_mode", 0);
  a.has_scale = node.has_attr("scale");
  a.scale = node.attr_float("scale", 0.f);
  a.softcap = node.attr_float("softcap", 0.f);
  if (a.mode < 0 || a.mode > 3)
    throw ModelError(node.describe() + ": qk_matmul_output_mode must be 0..3");
  if (node.attr_int("left_window_size", -1) != -1 || node.attr_int("right_window_size", -1) != -1)
    throw UnsupportedError(node.describe() +
                           ": Attention sliding windows are not supported by the cpu backend");
  return [a](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& q = ctx.in(0);
    const ir::Tensor& k = ctx.in(1);
    const ir::Tensor& v = ctx.in(2);
    const size_t rank = q.rank();
    if ((rank != 3 && rank != 4) || k.rank() != rank || v.rank() != rank)
      throw ModelError(n.describe() + ": Q, K and V must all be 3-D or all be 4-D");
    if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
      throw ModelError(n.describe() + ": Q, K and V must have the same dtype");
    const int64_t B = q.dims()[0];
    int64_t Hq, Hkv, Sq, Skv, d, dv;
    if (rank == 3) {
      if (a.q_heads <= 0 || a.kv_heads <= 0)
        throw ModelError(n.describe() + ": 3-D inputs need q_num_heads and kv_num_heads");
      Hq = a.q_heads;
      Hkv = a.kv_heads;
      Sq = q.dims()[1];
      Skv = k.dims()[1];
      if (q.dims()[2] % Hq || k.dims()[2] % Hkv || v.dims()[2] % Hkv)
        throw ModelError(n.describe() + ": hidden sizes must be divisible by the head counts");
      d = q.dims()[2] / Hq;
      dv = v.dims()[2] / Hkv;
      if (k.dims()[2] / Hkv != d) throw ModelError(n.describe() + ": Q and K head sizes differ");
    } else {
      Hq = q.dims()[1];
      Hkv = k.dims()[1];
      Sq = q.dims()[2];
      Skv = k.dims()[2];
      d = q.dims()[3];
      dv = v.dims()[3];
      if (k.dims()[3] != d || v.dims()[1] != Hkv)
        throw ModelError(n.describe() + ": K/V shapes do not match Q");
    }
    if (k.dims()[0] != B || v.dims()[0] != B || v.dims()[rank == 3 ? 1 : 2] != Skv)
      throw ModelError(n.describe() + ": K and V must share batch and sequence length");
    if (Hkv <= 0 || Hq % Hkv != 0)
      throw ModelError(n.describe() + ": q heads must be a multiple of kv heads");
    const bool has_past = ctx.has_input(4) && ctx.has_input(5);
    if (ctx.has_input(4) != ctx.has_input(5))
      throw ModelError(n.describe() + ": past_key and past_value must be given together");
    const int64_t P = has_past ? ctx.in(4).dims().at(2) : 0;
    const int64_t T = P + Skv;
    // nonpad_kv_seqlen (opset 24): keys at or past nonpad[b] are padding; the causal frontier
    // of an external cache is nonpad[b] - Sq.
    std::vector<int64_t> nonpad;
    if (ctx.has_input(6)) {
      if (has_past)
        throw ModelError(n.describe() +
                         ": nonpad_kv_seqlen cannot be combined with past_key/past_value");
      nonpad = read_int_tensor(n, ctx.in(6), "nonpad_kv_seqlen");
      if (static_cast<int64_t>(nonpad.size()) != B)
        throw ModelError(n.describe() + ": nonpad_kv_seqlen must have one value per batch");
    }
    if (has_past && (ctx.in(4).dims() != std::vector<int64_t>{B, Hkv, P, d} ||
                     ctx.in(5).dims() != std::vector<int64_t>{B, Hkv, P, dv}))
      throw ModelError(n.describe() +
                       ": past_key/past_value must be [B, kv_heads, past, head_size]");
    // Mask, right-aligned against [B, Hq, Sq, Tm] with Tm its own last dim (keys past Tm masked).
    const bool has_mask = ctx.has_input(3);
    std::vector<int64_t> mstrides;
    int64_t Tm = T;
    std::vector<float> mask;
    if (has_mask) {
      const ir::Tensor& m = ctx.in(3);
      if (m.rank() < 1 || m.rank() > 4)
        throw ModelError(n.describe() + ": attn_mask must have rank 1 to 4");
      Tm = m.dims().back();
      const std::vector<int64_t> full{B, Hq, Sq, Tm};
      if (Tm > T || broadcast_shapes(n, m.dims(), full) != full)
        throw ModelError(n.describe() +
                         ": attn_mask cannot be broadcast to [B, q_heads, q_len, total_len]");
      mstrides = broadcast_strides(m.dims(), full);
      if (m.dtype() == ir::DType::Bool) {
        for (bool b : m.data<bool>())
          mask.push_back(b ? 0.f : -std::numeric_limits<float>::infinity());
      } else {
        mask = read_float_tensor(n, m, "attn_mask");
      }
    }
    const std::vector<int64_t> y_dims =
        rank == 4 ? std::vector<int64_t>{B, Hq, Sq, dv} : std::vector<int64_t>{B, Sq, Hq * dv};
    ir::Tensor& y = ctx.alloc_output(0, q.dtype(), y_dims);
    ir::dispatch<MCC_FLOAT_DTYPES>(q.dtype(), n.describe() + ": Attention", [&](auto tag) {
      using T_ = typename decltype(tag)::type;
      using A = std::conditional_t<std::is_same_v<T_, double>, double, float>;
      using RM = Eigen::Matrix<A, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      std::vector<A> qv = load<A, T_>(q), kv = load<A, T_>(k), vv = load<A, T_>(v);
      if (rank == 3) {
        qv = to_heads(qv, B, Sq, Hq, d);
        kv = to_heads(kv, B, Skv, Hkv, d);
        vv = to_heads(vv, B, Skv, Hkv, dv);
      }
      // present = concat(past, new) along the sequence axis.
      std::vector<A> kt(static_cast<size_t>(B * Hkv * T * d)),
          vt(static_cast<size_t>(B * Hkv * T * dv));
      const std::vector<A> pk = has_past ? load<A, T_>(ctx.in(4)) : std::vector<A>{};
      const std::vector<A> pv = has_past ? load<A, T_>(ctx.in(5)) : std::vector<A>{};
      for (int64_t bh = 0; bh < B * Hkv; ++bh) {
        std::copy_n(pk.begin() + bh * P * d, P * d, kt.begin() + bh * T * d);
        std::copy_n(kv.begin() + bh * Skv * d, Skv * d, kt.begin() + (bh * T + P) * d);
        std::copy_n(pv.begin() + bh * P * dv, P * dv, vt.begin() + bh * T * dv);
        std::copy_n(vv.begin() + bh * Skv * dv, Skv * dv, vt.begin() + (bh * T + P) * dv);
      }
      const A scale =
          static_cast<A>(a.has_scale ? a.scale : 1.0 / std::sqrt(static_cast<double>(d)));
      const bool want_qk = ctx.num_outputs() > 3 && ctx.wants_output(3);
      std::vector<A> qk_out(want_qk ? static_cast<size_t>(B * Hq * Sq * T) : 0);
      std::vector<A> yv(static_cast<size_t>(B * Hq * Sq * dv));
      const A ninf = -std::numeric_limits<A>::infinity();
      ctx.parallel_for(B * Hq, Sq * T * (d + dv), [&](int64_t lo, int64_t hi) {
        RM s(Sq, T);
        std::vector<A> bias(static_cast<size_t>(T));
        for (int64_t bh = lo; bh < hi; ++bh) {
          const int64_t b = bh / Hq, h = bh % Hq, kh = h / (Hq / Hkv);
          Eigen::Map<const RM> qm(qv.data() + bh * Sq * d, Sq, d);
          Eigen::Map<const RM> km(kt.data() + (b * Hkv + kh) * T * d, T, d);
          Eigen::Map<const RM> vm(vt.data() + (b * Hkv + kh) * T * dv, T, dv);
          s.noalias() = qm * km.transpose();
          s *= scale;
          for (int64_t i = 0; i < Sq; ++i) {
            A* row = s.data() + i * T;
            bool any = false;
            for (int64_t j = 0; j < T; ++j) {
              A bj = 0;
              if (has_mask) {
                bj = j < Tm ? static_cast<A>(
                                  mask[static_cast<size_t>(b * mstrides[0] + h * mstrides[1] +
                                                           i * mstrides[2] + j * mstrides[3])])
                            : ninf;
              }
              if (a.causal && j > i + (nonpad.empty() ? P : nonpad[static_cast<size_t>(b)] - Sq))
                bj = ninf;
              if (!nonpad.empty() && j >= nonpad[static_cast<size_t>(b)]) bj = ninf;
              bias[static_cast<size_t>(j)] = bj;
              any = any || bj != ninf;
              if (a.softcap > 0)
                row[j] = static_cast<A>(a.softcap) * std::tanh(row[j] / static_cast<A>(a.softcap));
            }
            A* qo = want_qk ? qk_out.data() + (bh * Sq + i) * T : nullptr;
            if (qo && a.mode <= 1) std::copy_n(row, T, qo);
            for (int64_t j = 0; j < T; ++j) row[j] += bias[static_cast<size_t>(j)];
            if (qo && a.mode == 2) std::copy_n(row, T, qo);
            // Softmax; a row with every key masked gets zero probabilities.
            A mx = ninf;
            for (int64_t j = 0; j < T; ++j) mx = std::max(mx, row[j]);
            if (!any || mx == ninf) {
              std::fill(row, row + T, A(0));
            } else {
              A sum = 0;
              for (int64_t j = 0; j < T; ++j) sum += (row[j] = std::exp(row[j] - mx));
              for (int64_t j = 0; j < T; ++j) row[j] /= sum;
            }
            if (qo && a.mode == 3) std::copy_n(row, T, qo);
          }
          Eigen::Map<RM> ym(yv.data() + bh * Sq * dv, Sq, dv);
          ym.noalias() = s * vm;
        }
      });
      auto yo = y.mutable_data<T_>();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hq; ++h)
          for (int64_t i = 0; i < Sq; ++i)
            for (int64_t c = 0; c < dv; ++c) {
              const A val = yv[static_cast<size_t>(((b * Hq + h) * Sq + i) * dv + c)];
              const int64_t o =
                  rank == 4 ? ((b * Hq + h) * Sq + i) * dv + c : ((b * Sq + i) * Hq + h) * dv + c;
              yo[static_cast<size_t>(o)] = static_cast<T_>(val);
            }
      auto store = [&](size_t idx, const std::vector<A>& src, std::vector<int64_t> dims) {
        if (ctx.num_outputs() <= idx || !ctx.wants_output(idx)) return;
        auto out = ctx.alloc_output(idx, q.dtype(), std::move(dims)).template mutable_data<T_>();
        for (size_t i = 0; i < src.size(); ++i) out[i] = static_cast<T_>(src[i]);
      };
      store(1, kt, {B, Hkv, T, d});
      store(2, vt, {B, Hkv, T, dv});
      if (want_qk) store(3, qk_out, {B, Hq, Sq, T});
    });
  };
}

// RotaryEmbedding: rotates the first rotary_embedding_dim values of each head by the cos/sin
// rows of its position (position_ids into [max_pos, rd / 2] caches, or [B, S, rd / 2] caches).
Kernel make_rotary(const ir::Node& node) {
  const bool interleaved = node.attr_int("interleaved", 0) != 0;
  const int64_t rd_attr = node.attr_int("rotary_embedding_dim", 0),
                heads_attr = node.attr_int("num_heads", 0);
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.rank() != 3 && x.rank() != 4)
      throw ModelError(n.describe() + ": input must be 3-D or 4-D");
    const bool four = x.rank() == 4;
    const int64_t B = x.dims()[0], S = four ? x.dims()[2] : x.dims()[1];
    const int64_t H = four ? x.dims()[1] : heads_attr;
    if (H <= 0 || (!four && x.dims()[2] % H != 0))
      throw ModelError(n.describe() + ": 3-D input needs num_heads dividing the hidden size");
    const int64_t hd = four ? x.dims()[3] : x.dims()[2] / H;
    const int64_t rd = rd_attr ? rd_attr : hd, half = rd / 2;
    if (rd > hd || rd % 2)
      throw ModelError(n.describe() + ": rotary_embedding_dim must be even and <= head size");
    const auto cosv = read_float_tensor(n, ctx.in(1), "cos_cache");
    const auto sinv = read_float_tensor(n, ctx.in(2), "sin_cache");
    if (ctx.in(1).dims() != ctx.in(2).dims() || ctx.in(1).dims().empty() ||
        ctx.in(1).dims().back() != half)
      throw ModelError(n.describe() +
                       ": cos_cache/sin_cache must match and end in rotary_embedding_dim / 2");
    std::vector<int64_t> pos;
    if (ctx.has_input(3)) {
      pos = read_int_tensor(n, ctx.in(3), "position_ids");
      if (static_cast<int64_t>(pos.size()) != B * S)
        throw ModelError(n.describe() + ": position_ids must be [B, S]");
      const int64_t rows = static_cast<int64_t>(cosv.size()) / half;
      for (int64_t p : pos)
        if (p < 0 || p >= rows)
          throw ModelError(n.describe() + ": position id " + std::to_string(p) +
                           " is outside the cache");
    } else if (static_cast<int64_t>(cosv.size()) != B * S * half) {
      throw ModelError(
          n.describe() +
          ": without position_ids the caches must be [B, S, rotary_embedding_dim / 2]");
    }
    ir::Tensor& y = ctx.alloc_output(0, x.dtype(), x.dims());
    ir::dispatch<MCC_FLOAT_DTYPES>(x.dtype(), n.describe() + ": RotaryEmbedding", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const auto xv = x.data<T>();
      auto yv = y.mutable_data<T>();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t si = 0; si < S; ++si) {
          const int64_t row = pos.empty() ? b * S + si : pos[static_cast<size_t>(b * S + si)];
          const float* c = cosv.data() + row * half;
          const float* sn = sinv.data() + row * half;
          for (int64_t h = 0; h < H; ++h) {
            const int64_t base = four ? ((b * H + h) * S + si) * hd : ((b * S + si) * H + h) * hd;
            for (int64_t i = rd; i < hd; ++i)
              yv[static_cast<size_t>(base + i)] = xv[static_cast<size_t>(base + i)];
            for (int64_t i = 0; i < half; ++i) {
              const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
              const A x1 = static_cast<A>(static_cast<float>(xv[static_cast<size_t>(base + i1)]));
              const A x2 = static_cast<A>(static_cast<float>(xv[static_cast<size_t>(base + i2)]));
              yv[static_cast<size_t>(base + i1)] = static_cast<T>(c[i] * x1 - sn[i] * x2);
              yv[static_cast<size_t>(base + i2)] = static_cast<T>(sn[i] * x1 + c[i] * x2);
            }
          }
        }
    });
  };
}

// LinearAttention: the recurrent state S [B, Hkv, dk, dv] per step t: S *= exp(decay) (gated
// rules), v <- beta * (v - S^T k) (delta rules), S += k v^T, then o = scale * q S for every query
// head of the kv head's group. All math in f32 (f64 for f64 inputs), as the reference.
Kernel make_linear_attention(const ir::Node& node) {
  const std::string rule = node.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    throw ModelError(node.describe() + ": update_rule must be linear, gated, delta or gated_delta");
  const int64_t Hq = node.attr_int("q_num_heads", 0), Hkv = node.attr_int("kv_num_heads", 0);
  if (Hq <= 0 || Hkv <= 0 || Hq % Hkv != 0)
    throw ModelError(node.describe() + ": q_num_heads must be a positive multiple of kv_num_heads");
  const float scale_attr = node.attr_float("scale", 0.f);
  const bool gating = rule == "gated" || rule == "gated_delta",
             delta = rule == "delta" || rule == "gated_delta";
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& q = ctx.in(0);
    const ir::Tensor& k = ctx.in(1);
    const ir::Tensor& v = ctx.in(2);
    if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3)
      throw ModelError(n.describe() + ": query, key and value must be 3-D");
    const int64_t B = q.dims()[0], T = q.dims()[1];
    if (q.dims()[2] % Hq || k.dims()[2] % Hkv || v.dims()[2] % Hkv)
      throw ModelError(n.describe() + ": hidden sizes must be divisible by the head counts");
    const int64_t dk = q.dims()[2] / Hq, dv = v.dims()[2] / Hkv, group = Hq / Hkv;
    if (k.dims() != std::vector<int64_t>{B, T, Hkv * dk} || v.dims()[0] != B || v.dims()[1] != T)
      throw ModelError(n.describe() + ": key/value shapes do not match query");
    if (gating != ctx.has_input(4))
      throw ModelError(n.describe() + ": decay is required by, and only by, gated rules");
    if (delta != ctx.has_input(5))
      throw ModelError(n.describe() + ": beta is required by, and only by, delta rules");
    std::vector<float> decay, beta;
    int64_t decay_last = 0, beta_last = 0;
    if (gating) {
      const ir::Tensor& g = ctx.in(4);
      decay_last = g.rank() == 3 ? g.dims()[2] : -1;
      if (g.rank() != 3 || g.dims()[0] != B || g.dims()[1] != T ||
          (decay_last != Hkv && decay_last != Hkv * dk))
        throw ModelError(n.describe() +
                         ": decay must be [B, T, kv_heads] or [B, T, kv_heads * dk]");
      decay = read_float_tensor(n, g, "decay");
    }
    if (delta) {
      const ir::Tensor& bt = ctx.in(5);
      beta_last = bt.rank() == 3 ? bt.dims()[2] : -1;
      if (bt.rank() != 3 || bt.dims()[0] != B || bt.dims()[1] != T ||
          (beta_last != Hkv && beta_last != 1))
        throw ModelError(n.describe() + ": beta must be [B, T, kv_heads] or [B, T, 1]");
      beta = read_float_tensor(n, bt, "beta");
    }
    const bool has_past = ctx.has_input(3);
    if (has_past && ctx.in(3).dims() != std::vector<int64_t>{B, Hkv, dk, dv})
      throw ModelError(n.describe() + ": past_state must be [B, kv_heads, dk, dv]");
    const ir::DType state_dt = has_past ? ctx.in(3).dtype() : q.dtype();
    std::vector<double> state(static_cast<size_t>(B * Hkv * dk * dv), 0.0);
    if (has_past) {
      const auto ps = read_float_tensor(n, ctx.in(3), "past_state");
      std::copy(ps.begin(), ps.end(), state.begin());
    }
    const double scale = scale_attr != 0.f ? scale_attr : 1.0 / std::sqrt(static_cast<double>(dk));
    const auto qv = read_float_tensor(n, q, "query"), kv = read_float_tensor(n, k, "key"),
               vv = read_float_tensor(n, v, "value");
    std::vector<double> out(static_cast<size_t>(B * T * Hq * dv)), vt(static_cast<size_t>(dv));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hkv; ++h) {
          double* st = state.data() + (b * Hkv + h) * dk * dv;
          const float* kt = kv.data() + ((b * T + t) * Hkv + h) * dk;
          const float* vs = vv.data() + ((b * T + t) * Hkv + h) * dv;
          if (gating)
            for (int64_t d = 0; d < dk; ++d) {
              const float g = decay[static_cast<size_t>((b * T + t) * decay_last +
                                                        (decay_last == Hkv ? h : h * dk + d))];
              const double f = std::exp(static_cast<double>(g));
              for (int64_t m = 0; m < dv; ++m) st[d * dv + m] *= f;
            }
          for (int64_t m = 0; m < dv; ++m) vt[static_cast<size_t>(m)] = vs[m];
          if (delta) {
            const double bt =
                beta[static_cast<size_t>((b * T + t) * beta_last + (beta_last == 1 ? 0 : h))];
            for (int64_t m = 0; m < dv; ++m) {
              double r = 0;
              for (int64_t d = 0; d < dk; ++d) r += st[d * dv + m] * kt[d];
              vt[static_cast<size_t>(m)] = bt * (vt[static_cast<size_t>(m)] - r);
            }
          }
          for (int64_t d = 0; d < dk; ++d)
            for (int64_t m = 0; m < dv; ++m) st[d * dv + m] += kt[d] * vt[static_cast<size_t>(m)];
          for (int64_t r = 0; r < group; ++r) {
            const int64_t qh = h * group + r;
            const float* qt = qv.data() + ((b * T + t) * Hq + qh) * dk;
            double* o = out.data() + ((b * T + t) * Hq + qh) * dv;
            for (int64_t m = 0; m < dv; ++m) {
              double acc = 0;
              for (int64_t d = 0; d < dk; ++d) acc += qt[d] * st[d * dv + m];
              o[m] = scale * acc;
            }
          }
        }
    auto write = [&](ir::Tensor& dst, const std::vector<double>& src) {
      ir::dispatch<MCC_FLOAT_DTYPES>(dst.dtype(), n.describe() + ": LinearAttention",
                                     [&](auto tag) {
                                       using T_ = typename decltype(tag)::type;
                                       auto o = dst.mutable_data<T_>();
                                       for (size_t i = 0; i < src.size(); ++i)
                                         o[i] = static_cast<T_>(static_cast<float>(src[i]));
                                     });
    };
    write(ctx.alloc_output(0, q.dtype(), {B, T, Hq * dv}), out);
    if (ctx.num_outputs() > 1 && ctx.wants_output(1))
      write(ctx.alloc_output(1, state_dt, {B, Hkv, dk, dv}), state);
  };
}

// FlexAttention (ai.onnx.preview): softmax(score_mod(scale * Q K^T)) then prob_mod, times V, with
// GQA; score_mod/prob_mod are subgraphs run once on the whole [B, Hq, L, S] tensor.
Kernel make_flex_attention(const ir::Node& node) {
  const bool has_scale = node.has_attr("scale");
  const float scale_attr = node.attr_float("scale", 0.f);
  return [=](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& q = ctx.in(0);
    const ir::Tensor& k = ctx.in(1);
    const ir::Tensor& v = ctx.in(2);
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
      throw ModelError(n.describe() + ": Q, K and V must be 4-D");
    if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
      throw ModelError(n.describe() + ": Q, K and V must share a dtype");
    const int64_t B = q.dims()[0], Hq = q.dims()[1], L = q.dims()[2], E = q.dims()[3];
    const int64_t Hkv = k.dims()[1], S = k.dims()[2], Ev = v.dims()[3];
    if (k.dims()[0] != B || v.dims()[0] != B || k.dims()[3] != E || v.dims()[1] != Hkv ||
        v.dims()[2] != S || Hkv <= 0 || Hq % Hkv != 0)
      throw ModelError(n.describe() + ": K/V shapes do not match Q");
    const int64_t rep = Hq / Hkv;
    ir::Tensor& y = ctx.alloc_output(0, q.dtype(), {B, Hq, L, Ev});
    ir::dispatch<MCC_FLOAT_DTYPES>(q.dtype(), n.describe() + ": FlexAttention", [&](auto tag) {
      using T_ = typename decltype(tag)::type;
      using A = std::conditional_t<std::is_same_v<T_, double>, double, float>;
      using RM = Eigen::Matrix<A, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      const auto qv = load<A, T_>(q), kv = load<A, T_>(k), vv = load<A, T_>(v);
      const A scale =
          static_cast<A>(has_scale ? scale_attr : 1.0 / std::sqrt(static_cast<double>(E)));
      ir::Tensor scores = ir::Tensor::allocate(ir::dtype_of<A>(), {B, Hq, L, S});
      A* sp = scores.mutable_data<A>().data();
      for (int64_t bh = 0; bh < B * Hq; ++bh) {
        const int64_t b = bh / Hq, kh = (bh % Hq) / rep;
        Eigen::Map<const RM> qm(qv.data() + bh * L * E, L, E);
        Eigen::Map<const RM> km(kv.data() + (b * Hkv + kh) * S * E, S, E);
        Eigen::Map<RM>(sp + bh * L * S, L, S).noalias() = scale * (qm * km.transpose());
      }
      auto apply = [&](const char* attr, ir::Tensor t) {
        const ir::Graph* g = n.attr_graph(attr);
        if (!g) return t;
        auto outs = ctx.run_subgraph(*g, {RValue::of(std::move(t))});
        if (outs.empty() || outs[0].kind != RValue::Kind::Tensor ||
            outs[0].tensor.dtype() != ir::dtype_of<A>() ||
            outs[0].tensor.dims() != std::vector<int64_t>{B, Hq, L, S})
          throw ModelError(n.describe() + ": " + attr +
                           " must return one [B, H, L, S] tensor of the score dtype");
        return outs[0].tensor;
      };
      ir::Tensor modded = apply("score_mod", std::move(scores));
      ir::Tensor probs = ir::Tensor::allocate(ir::dtype_of<A>(), {B, Hq, L, S});
      const A* mp = modded.data<A>().data();
      A* pp = probs.mutable_data<A>().data();
      for (int64_t r = 0; r < B * Hq * L; ++r) {
        A mx = -std::numeric_limits<A>::infinity(), sum = 0;
        for (int64_t j = 0; j < S; ++j) mx = std::max(mx, mp[r * S + j]);
        for (int64_t j = 0; j < S; ++j) sum += (pp[r * S + j] = std::exp(mp[r * S + j] - mx));
        for (int64_t j = 0; j < S; ++j) pp[r * S + j] /= sum;
      }
      const ir::Tensor pm = apply("prob_mod", std::move(probs));
      const A* pmp = pm.data<A>().data();
      auto yo = y.mutable_data<T_>();
      RM out(L, Ev);
      for (int64_t bh = 0; bh < B * Hq; ++bh) {
        const int64_t b = bh / Hq, kh = (bh % Hq) / rep;
        Eigen::Map<const RM> pmm(pmp + bh * L * S, L, S);
        Eigen::Map<const RM> vm(vv.data() + (b * Hkv + kh) * S * Ev, S, Ev);
        out.noalias() = pmm * vm;
        for (int64_t i = 0; i < L * Ev; ++i)
          yo[static_cast<size_t>(bh * L * Ev + i)] = static_cast<T_>(out.data()[i]);
      }
    });
  };
}

}  // namespace

void register_attention(KernelRegistry& r) {
  r.add("Attention", 23, 0, make_attention);
  r.add("FlexAttention", 1, 0, make_flex_attention, "ai.onnx.preview");
  r.add("RotaryEmbedding", 23, 0, make_rotary);
  r.add("LinearAttention", 27, 0, make_linear_attention);
}

}  // namespace mcc::backends::cpu
