// Detection and sampling kernels.
//   NonMaxSuppression  opset 10, 11 (center_point_box 0/1, per batch and class; the three scalar
//                      inputs are optional; a missing max_output_boxes_per_class selects nothing)
//   RoiAlign           opset 10, 16, 22 (mode avg/max; coordinate_transformation_mode
//                      half_pixel / output_half_pixel, default output_half_pixel before opset 16)
//   GridSample         opset 16, 20, 22 (modes bilinear|linear, nearest, bicubic|cubic; padding
//                      zeros/border/reflection; align_corners; any number of spatial dims)
// dtypes: boxes/scores/X/rois/grid f32, f64, f16, bf16; batch_indices i32/i64; NMS output i64.
// Accumulation: f64. RoiAlign max mode takes the max of the weighted bilinear corners, as the
// ONNX reference and ONNX Runtime do.
// Not supported: nothing known.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "backends/cpu/kernels/misc_util.h"

namespace mcc::backends::cpu {
namespace {

// ---------------------------------------------------------------------------- NonMaxSuppression

bool suppressed_by_iou(const double* b1, const double* b2, bool center, double iou_threshold) {
  double x1min, x1max, y1min, y1max, x2min, x2max, y2min, y2max;
  if (!center) {
    y1min = std::min(b1[0], b1[2]); y1max = std::max(b1[0], b1[2]);
    x1min = std::min(b1[1], b1[3]); x1max = std::max(b1[1], b1[3]);
    y2min = std::min(b2[0], b2[2]); y2max = std::max(b2[0], b2[2]);
    x2min = std::min(b2[1], b2[3]); x2max = std::max(b2[1], b2[3]);
  } else {
    x1min = b1[0] - b1[2] / 2; x1max = b1[0] + b1[2] / 2;
    y1min = b1[1] - b1[3] / 2; y1max = b1[1] + b1[3] / 2;
    x2min = b2[0] - b2[2] / 2; x2max = b2[0] + b2[2] / 2;
    y2min = b2[1] - b2[3] / 2; y2max = b2[1] + b2[3] / 2;
  }
  const double ix0 = std::max(x1min, x2min), ix1 = std::min(x1max, x2max);
  if (ix1 <= ix0) return false;
  const double iy0 = std::max(y1min, y2min), iy1 = std::min(y1max, y2max);
  if (iy1 <= iy0) return false;
  const double inter = (ix1 - ix0) * (iy1 - iy0);
  const double a1 = (x1max - x1min) * (y1max - y1min);
  const double a2 = (x2max - x2min) * (y2max - y2min);
  const double uni = a1 + a2 - inter;
  if (inter <= 0 || a1 <= 0 || a2 <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

Kernel make_nms(const ir::Node& node) {
  const int64_t cpb = node.attr_int("center_point_box", 0);
  if (cpb != 0 && cpb != 1)
    throw ModelError(node.describe() + ": center_point_box must be 0 or 1, got " + std::to_string(cpb));
  return [center = cpb == 1](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& bt = ctx.in(0);
    const ir::Tensor& st = ctx.in(1);
    if (bt.rank() != 3 || bt.dims()[2] != 4)
      throw ModelError(n.describe() + ": boxes must be [batches, boxes, 4], got " + misc::dims_str(bt.dims()));
    if (st.rank() != 3 || st.dims()[0] != bt.dims()[0] || st.dims()[2] != bt.dims()[1])
      throw ModelError(n.describe() + ": scores must be [batches, classes, boxes] matching boxes " +
                       misc::dims_str(bt.dims()) + ", got " + misc::dims_str(st.dims()));
    ir::dispatch<MCC_FLOAT_DTYPES>(bt.dtype(), n.describe() + ": boxes", [](auto) {});
    int64_t max_out = 0;
    double iou_th = 0.0, score_th = 0.0;
    bool has_score_th = false;
    if (ctx.has_input(2) && ctx.in(2).numel() > 0) max_out = std::max<int64_t>(0, misc::scalar_i64(n, ctx.in(2), "max_output_boxes_per_class"));
    if (ctx.has_input(3) && ctx.in(3).numel() > 0) iou_th = misc::scalar_f64(n, ctx.in(3), "iou_threshold");
    if (ctx.has_input(4) && ctx.in(4).numel() > 0) { score_th = misc::scalar_f64(n, ctx.in(4), "score_threshold"); has_score_th = true; }
    const std::vector<double> boxes = misc::read_f64(n, bt, "boxes");
    const std::vector<double> scores = misc::read_f64(n, st, "scores");
    const int64_t B = bt.dims()[0], NB = bt.dims()[1], C = st.dims()[1];
    std::vector<int64_t> sel;  // triples
    std::vector<int64_t> cand, kept;
    for (int64_t b = 0; b < B && max_out > 0; ++b)
      for (int64_t c = 0; c < C; ++c) {
        const double* sc = scores.data() + (b * C + c) * NB;
        cand.clear();
        for (int64_t i = 0; i < NB; ++i)
          if (!has_score_th || sc[i] > score_th) cand.push_back(i);
        // Highest score first; equal scores keep the lower box index first.
        std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return sc[x] > sc[y]; });
        kept.clear();
        for (int64_t i : cand) {
          if (static_cast<int64_t>(kept.size()) >= max_out) break;
          bool ok = true;
          for (int64_t k : kept)
            if (suppressed_by_iou(&boxes[(b * NB + i) * 4], &boxes[(b * NB + k) * 4], center, iou_th)) { ok = false; break; }
          if (!ok) continue;
          kept.push_back(i);
          sel.insert(sel.end(), {b, c, i});
        }
      }
    ir::Tensor& y = ctx.alloc_output(0, ir::DType::I64, {static_cast<int64_t>(sel.size() / 3), 3});
    std::copy(sel.begin(), sel.end(), y.mutable_data<int64_t>().begin());
  };
}

// ---------------------------------------------------------------------------- RoiAlign

struct RoiAlignAttrs {
  bool max_mode = false;
  bool half_pixel = true;
  int64_t out_h = 1, out_w = 1, sampling_ratio = 0;
  double spatial_scale = 1.0;
};

struct Corner { int64_t p1, p2, p3, p4; double w1, w2, w3, w4; };

Kernel make_roi_align(const ir::Node& node) {
  RoiAlignAttrs a;
  const std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max")
    throw ModelError(node.describe() + ": mode must be avg or max, got '" + mode + "'");
  a.max_mode = mode == "max";
  const std::string ctm = node.attr_string("coordinate_transformation_mode",
                                           node.since_version >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    throw ModelError(node.describe() + ": coordinate_transformation_mode must be half_pixel or "
                     "output_half_pixel, got '" + ctm + "'");
  a.half_pixel = ctm == "half_pixel";
  a.out_h = node.attr_int("output_height", 1);
  a.out_w = node.attr_int("output_width", 1);
  a.sampling_ratio = node.attr_int("sampling_ratio", 0);
  a.spatial_scale = node.attr_float("spatial_scale", 1.0f);
  if (a.out_h <= 0 || a.out_w <= 0 || a.sampling_ratio < 0)
    throw ModelError(node.describe() + ": output_height/output_width must be > 0 and sampling_ratio >= 0");
  return [a](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& xt = ctx.in(0);
    const ir::Tensor& rt = ctx.in(1);
    if (xt.rank() != 4) throw ModelError(n.describe() + ": X must be [N, C, H, W], got " + misc::dims_str(xt.dims()));
    if (rt.rank() != 2 || rt.dims()[1] != 4)
      throw ModelError(n.describe() + ": rois must be [num_rois, 4], got " + misc::dims_str(rt.dims()));
    const std::vector<int64_t> bidx = read_int_tensor(n, ctx.in(2), "batch_indices");
    const int64_t R = rt.dims()[0], N = xt.dims()[0], C = xt.dims()[1], H = xt.dims()[2], W = xt.dims()[3];
    if (static_cast<int64_t>(bidx.size()) != R)
      throw ModelError(n.describe() + ": batch_indices must have num_rois=" + std::to_string(R) + " entries");
    for (int64_t b : bidx)
      if (b < 0 || b >= N) throw ModelError(n.describe() + ": batch index " + std::to_string(b) + " out of range");
    const std::vector<double> rois = misc::read_f64(n, rt, "rois");
    ir::dispatch<MCC_FLOAT_DTYPES>(xt.dtype(), n.describe() + ": X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = xt.data<T>().data();
      T* y = ctx.alloc_output(0, xt.dtype(), {R, C, a.out_h, a.out_w}).template mutable_data<T>().data();
      const int64_t PH = a.out_h, PW = a.out_w;
      ctx.parallel_for(R, C * PH * PW * 16, [&](int64_t r0, int64_t r1) {
        std::vector<Corner> pre;
        for (int64_t r = r0; r < r1; ++r) {
          const double off = a.half_pixel ? 0.5 : 0.0;
          const double sw = rois[r * 4 + 0] * a.spatial_scale - off, sh = rois[r * 4 + 1] * a.spatial_scale - off;
          const double ew = rois[r * 4 + 2] * a.spatial_scale - off, eh = rois[r * 4 + 3] * a.spatial_scale - off;
          double rw = ew - sw, rh = eh - sh;
          if (!a.half_pixel) { rw = std::max(rw, 1.0); rh = std::max(rh, 1.0); }
          if (!std::isfinite(rw) || !std::isfinite(rh) || rw > 1e6 * PW || rh > 1e6 * PH)
            throw ModelError(n.describe() + ": roi " + std::to_string(r) + " has a non-finite or huge extent");
          const double bh = rh / PH, bw = rw / PW;
          const int64_t gh = a.sampling_ratio > 0 ? a.sampling_ratio : static_cast<int64_t>(std::ceil(rh / PH));
          const int64_t gw = a.sampling_ratio > 0 ? a.sampling_ratio : static_cast<int64_t>(std::ceil(rw / PW));
          const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
          pre.assign(static_cast<size_t>(std::max<int64_t>(PH * PW * gh * gw, 0)), Corner{0, 0, 0, 0, 0, 0, 0, 0});
          size_t k = 0;
          for (int64_t ph = 0; ph < PH; ++ph)
            for (int64_t pw = 0; pw < PW; ++pw)
              for (int64_t iy = 0; iy < gh; ++iy) {
                const double yy = sh + ph * bh + (iy + 0.5) * bh / gh;
                for (int64_t ix = 0; ix < gw; ++ix, ++k) {
                  double xx = sw + pw * bw + (ix + 0.5) * bw / gw, yv = yy;
                  if (yv < -1.0 || yv > H || xx < -1.0 || xx > W) continue;  // all-zero corner
                  yv = std::max(yv, 0.0);
                  xx = std::max(xx, 0.0);
                  int64_t yl = static_cast<int64_t>(yv), xl = static_cast<int64_t>(xx), yh, xh;
                  if (yl >= H - 1) { yh = yl = H - 1; yv = static_cast<double>(yl); } else yh = yl + 1;
                  if (xl >= W - 1) { xh = xl = W - 1; xx = static_cast<double>(xl); } else xh = xl + 1;
                  const double ly = yv - yl, lx = xx - xl, hy = 1.0 - ly, hx = 1.0 - lx;
                  pre[k] = Corner{yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh, hy * hx, hy * lx, ly * hx, ly * lx};
                }
              }
          for (int64_t c = 0; c < C; ++c) {
            const T* xc = x + (bidx[r] * C + c) * H * W;
            T* yc = y + (r * C + c) * PH * PW;
            size_t q = 0;
            for (int64_t p = 0; p < PH * PW; ++p) {
              double acc = 0.0;
              bool first = true;
              for (int64_t s = 0; s < gh * gw; ++s, ++q) {
                const Corner& e = pre[q];
                const double v1 = e.w1 * misc::to_f64(xc[e.p1]), v2 = e.w2 * misc::to_f64(xc[e.p2]);
                const double v3 = e.w3 * misc::to_f64(xc[e.p3]), v4 = e.w4 * misc::to_f64(xc[e.p4]);
                if (!a.max_mode) acc += v1 + v2 + v3 + v4;
                else {
                  const double m = std::max(std::max(v1, v2), std::max(v3, v4));
                  acc = first ? m : std::max(acc, m);
                  first = false;
                }
              }
              yc[p] = misc::from_f64<T>(a.max_mode ? acc : acc / count);
            }
          }
        }
      });
    });
  };
}

// ---------------------------------------------------------------------------- GridSample

enum class GsMode { Nearest, Linear, Cubic };
enum class GsPad { Zeros, Border, Reflection };

struct GridSampleAttrs {
  GsMode mode = GsMode::Linear;
  GsPad pad = GsPad::Zeros;
  bool align_corners = false;
};

double gs_reflect(double x, double lo, double hi) {
  const double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const auto k = static_cast<int64_t>(dx / rng);
    const double r = dx - static_cast<double>(k) * rng;
    return k % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const auto k = static_cast<int64_t>(dx / rng);
    const double r = dx - static_cast<double>(k) * rng;
    return k % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

void cubic_coeffs(double t, double c[4]) {
  constexpr double A = -0.75;
  const double x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
  c[0] = ((A * x0 - 5 * A) * x0 + 8 * A) * x0 - 4 * A;
  c[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
  c[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
  c[3] = ((A * x3 - 5 * A) * x3 + 8 * A) * x3 - 4 * A;
}

Kernel make_grid_sample(const ir::Node& node) {
  GridSampleAttrs a;
  const std::string mode = node.attr_string("mode", node.since_version >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear" || mode == "linear") a.mode = GsMode::Linear;
  else if (mode == "nearest") a.mode = GsMode::Nearest;
  else if (mode == "bicubic" || mode == "cubic") a.mode = GsMode::Cubic;
  else throw ModelError(node.describe() + ": unknown mode '" + mode + "'");
  const std::string pad = node.attr_string("padding_mode", "zeros");
  if (pad == "zeros") a.pad = GsPad::Zeros;
  else if (pad == "border") a.pad = GsPad::Border;
  else if (pad == "reflection") a.pad = GsPad::Reflection;
  else throw ModelError(node.describe() + ": unknown padding_mode '" + pad + "'");
  a.align_corners = node.attr_int("align_corners", 0) != 0;
  return [a](KernelContext& ctx) {
    const ir::Node& n = ctx.node();
    const ir::Tensor& xt = ctx.in(0);
    const ir::Tensor& gt = ctx.in(1);
    const int64_t r = static_cast<int64_t>(xt.rank()) - 2;
    if (r < 1 || static_cast<int64_t>(gt.rank()) != r + 2 || gt.dims()[0] != xt.dims()[0] || gt.dims()[r + 1] != r)
      throw ModelError(n.describe() + ": X " + misc::dims_str(xt.dims()) + " and grid " + misc::dims_str(gt.dims()) +
                       " do not match ([N, C, D1..Dr] and [N, O1..Or, r])");
    const int64_t N = xt.dims()[0], C = xt.dims()[1];
    std::vector<int64_t> in_sp(xt.dims().begin() + 2, xt.dims().end());
    std::vector<int64_t> out_dims{N, C};
    int64_t P = 1, S = 1;
    for (int64_t i = 0; i < r; ++i) { out_dims.push_back(gt.dims()[1 + i]); P *= gt.dims()[1 + i]; S *= in_sp[i]; }
    const std::vector<double> grid = misc::read_f64(n, gt, "grid");
    const std::vector<int64_t> in_strides = contiguous_strides(in_sp);
    ir::dispatch<MCC_FLOAT_DTYPES>(xt.dtype(), n.describe() + ": X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = xt.data<T>().data();
      T* y = ctx.alloc_output(0, xt.dtype(), out_dims).template mutable_data<T>().data();
      const int taps_per_dim = a.mode == GsMode::Nearest ? 1 : a.mode == GsMode::Linear ? 2 : 4;
      ctx.parallel_for(N * P, C * 8 * taps_per_dim * r, [&](int64_t q0, int64_t q1) {
        std::vector<std::vector<std::pair<int64_t, double>>> taps(static_cast<size_t>(r));
        std::vector<std::pair<int64_t, double>> comb, next;
        for (int64_t q = q0; q < q1; ++q) {
          const int64_t b = q / P, p = q % P;
          for (int64_t i = 0; i < r; ++i) {
            const int64_t len = in_sp[i];
            const double g = grid[q * r + (r - 1 - i)];  // grid's last dim is (x, y, ...): reversed
            double v = a.align_corners ? (g + 1) / 2.0 * static_cast<double>(len - 1)
                                       : ((g + 1) * static_cast<double>(len) - 1) / 2.0;
            v = static_cast<double>(static_cast<float>(v));
            const double lo = a.align_corners ? 0.0 : -0.5;
            const double hi = a.align_corners ? static_cast<double>(len) - 1.0 : static_cast<double>(len) - 0.5;
            if (!std::isfinite(v)) v = -1.0e9;  // NaN/inf coordinates sample the padding
            if (a.mode == GsMode::Nearest) v = std::nearbyint(v);
            if (v < lo || v > hi) {
              if (a.pad == GsPad::Border) v = std::clamp(v, 0.0, static_cast<double>(len - 1));
              else if (a.pad == GsPad::Reflection) v = gs_reflect(v, lo, hi);
            }
            // Maps an integer index to a source index (-1: zero padding).
            auto at = [&](int64_t idx) -> int64_t {
              if (a.pad == GsPad::Zeros) return idx >= 0 && idx < len ? idx : -1;
              if (a.pad == GsPad::Border) return std::clamp<int64_t>(idx, 0, len - 1);
              const auto k = static_cast<int64_t>(gs_reflect(static_cast<double>(idx), lo, hi));
              return std::clamp<int64_t>(k, 0, len - 1);
            };
            auto& t = taps[static_cast<size_t>(i)];
            t.clear();
            if (a.mode == GsMode::Nearest) {
              t.emplace_back(at(static_cast<int64_t>(v)), 1.0);
            } else {
              const double f = std::floor(v);
              const auto x0 = static_cast<int64_t>(f);
              const double d = v - f;
              if (a.mode == GsMode::Linear) {
                t.emplace_back(at(x0), 1.0 - d);
                t.emplace_back(at(x0 + 1), d);
              } else {
                double c4[4];
                cubic_coeffs(d, c4);
                for (int k = 0; k < 4; ++k) t.emplace_back(at(x0 - 1 + k), c4[k]);
              }
            }
          }
          comb.assign(1, {0, 1.0});
          for (int64_t i = 0; i < r; ++i) {
            next.clear();
            for (auto& [off, w] : comb)
              for (auto& [idx, tw] : taps[static_cast<size_t>(i)])
                if (idx >= 0 && off >= 0) next.emplace_back(off + idx * in_strides[i], w * tw);
                else next.emplace_back(-1, 0.0);
            comb.swap(next);
          }
          for (int64_t c = 0; c < C; ++c) {
            const T* xc = x + (b * C + c) * S;
            double acc = 0.0;
            for (auto& [off, w] : comb)
              if (off >= 0) acc += w * misc::to_f64(xc[off]);
            y[(b * C + c) * P + p] = misc::from_f64<T>(acc);
          }
        }
      });
    });
  };
}

}  // namespace

void register_detection(KernelRegistry& r) {
  r.add("NonMaxSuppression", 10, 0, make_nms);
  r.add("RoiAlign", 10, 0, make_roi_align);
  r.add("GridSample", 16, 0, make_grid_sample);
}

}  // namespace mcc::backends::cpu
