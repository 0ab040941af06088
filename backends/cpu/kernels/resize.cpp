// Resize (opsets 10, 11, 13, 18, 19+) and Upsample (opset 7: scales attribute; 9: scales input).
//   modes: nearest (nearest_mode round_prefer_floor / round_prefer_ceil / floor / ceil), linear,
//          cubic (cubic_coeff_a, exclude_outside); antialias for linear/cubic (opset 18+);
//   coordinate_transformation_mode: half_pixel, half_pixel_symmetric, pytorch_half_pixel,
//          align_corners, asymmetric, tf_crop_and_resize (roi, extrapolation_value),
//          tf_half_pixel_for_nn (opsets 11-12);
//   output from scales or sizes, with axes and keep_aspect_ratio_policy (opset 18+); N-d.
// Resize-10 and Upsample use the asymmetric transform, and nearest takes floor when upsampling
// and ceil when downsampling (as ONNX Runtime does for these versions).
// Semantics follow the ONNX reference implementation: separable 1-D interpolation per resized
// axis, source coordinates and scales in f64, edge-clamped neighbours, ratio in (0, 1].
// dtypes: f32, f64, f16, bf16, i8, u8, i16, u16, i32, u32, i64, u64, bool (nearest only for bool).
// Accumulation: f64 (integers are rounded half-to-even and saturated when stored).
// Nearest is a direct gather (one pass, rows in parallel): the fast path for NCHW upsampling.
// Not supported: string and complex inputs.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/reduce_util.h"

namespace mcc::backends::cpu {
namespace {

enum class Mode { Nearest, Linear, Cubic };
enum class Coord {
  HalfPixel, HalfPixelSymmetric, PytorchHalfPixel, AlignCorners, Asymmetric, TfCropAndResize,
  TfHalfPixelForNN,  // opsets 11-12 only: x = (y + 0.5) / scale
};
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };
enum class AspectPolicy { Stretch, NotLarger, NotSmaller };

struct ResizeAttrs {
  int since = 0;
  bool upsample = false;           // Upsample op (scales attribute at opset 7, input at 9)
  std::vector<float> attr_scales;  // Upsample-7
  Mode mode = Mode::Nearest;
  Coord coord = Coord::HalfPixel;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  bool antialias = false;
  std::vector<int64_t> axes;
  AspectPolicy policy = AspectPolicy::Stretch;
};

template <class E>
E parse_enum(const ir::Node& n, const char* attr, const std::string& v,
             std::initializer_list<std::pair<const char*, E>> options) {
  std::string names;
  for (const auto& [name, e] : options) {
    if (v == name) return e;
    names += std::string(names.empty() ? "" : ", ") + name;
  }
  throw ModelError(n.describe() + ": " + attr + " '" + v + "' is not valid; expected one of " + names);
}

ResizeAttrs parse_attrs(const ir::Node& n, bool upsample) {
  ResizeAttrs a;
  a.since = n.since_version;
  a.upsample = upsample;
  std::string mode = n.attr_string("mode", "nearest");
  if (upsample && mode == "bilinear") mode = "linear";  // Upsample-7 spelling accepted by runtimes
  a.mode = parse_enum<Mode>(n, "mode", mode, {{"nearest", Mode::Nearest}, {"linear", Mode::Linear},
                                              {"cubic", Mode::Cubic}});
  if (upsample || a.since < 11) {
    if (a.mode == Mode::Cubic) throw ModelError(n.describe() + ": mode 'cubic' needs Resize-11 or newer");
    a.coord = Coord::Asymmetric;
    a.nearest = NearestMode::Simple;
    if (upsample && a.since < 9) {
      a.attr_scales = n.attr_floats("scales");
      if (a.attr_scales.empty()) throw ModelError(n.describe() + ": Upsample-7 requires the scales attribute");
    }
    return a;
  }
  a.coord = parse_enum<Coord>(
      n, "coordinate_transformation_mode", n.attr_string("coordinate_transformation_mode", "half_pixel"),
      {{"half_pixel", Coord::HalfPixel}, {"half_pixel_symmetric", Coord::HalfPixelSymmetric},
       {"pytorch_half_pixel", Coord::PytorchHalfPixel}, {"align_corners", Coord::AlignCorners},
       {"asymmetric", Coord::Asymmetric}, {"tf_crop_and_resize", Coord::TfCropAndResize},
       {"tf_half_pixel_for_nn", Coord::TfHalfPixelForNN}});
  a.nearest = parse_enum<NearestMode>(n, "nearest_mode", n.attr_string("nearest_mode", "round_prefer_floor"),
                                      {{"round_prefer_floor", NearestMode::RoundPreferFloor},
                                       {"round_prefer_ceil", NearestMode::RoundPreferCeil},
                                       {"floor", NearestMode::Floor}, {"ceil", NearestMode::Ceil}});
  a.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  a.extrapolation = n.attr_float("extrapolation_value", 0.0f);
  a.antialias = n.attr_int("antialias", 0) != 0;
  a.axes = n.attr_ints("axes");
  a.policy = parse_enum<AspectPolicy>(n, "keep_aspect_ratio_policy", n.attr_string("keep_aspect_ratio_policy", "stretch"),
                                      {{"stretch", AspectPolicy::Stretch}, {"not_larger", AspectPolicy::NotLarger},
                                       {"not_smaller", AspectPolicy::NotSmaller}});
  return a;
}

// One output coordinate along one axis: the input indices (edge-clamped) and their weights.
struct Taps {
  int64_t first = 0;  // offset into AxisPlan::idx / w
  int64_t count = 0;  // 0: extrapolated (tf_crop_and_resize outside the input)
};

struct AxisPlan {
  int64_t in = 0, out = 0;
  std::vector<Taps> taps;  // per output coordinate
  std::vector<int64_t> idx;
  std::vector<double> w;
};

double cubic_weight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

AxisPlan plan_axis(const ResizeAttrs& a, int64_t in, int64_t out, double scale, double roi_lo, double roi_hi) {
  AxisPlan p;
  p.in = in;
  p.out = out;
  p.taps.resize(static_cast<size_t>(out));
  const double in_w = static_cast<double>(in);
  const double out_w = scale * in_w;  // the reference uses the unrounded output width
  std::vector<double> coeffs;
  for (int64_t o = 0; o < out; ++o) {
    const double y = static_cast<double>(o);
    double x = 0;
    switch (a.coord) {
      case Coord::AlignCorners: x = out_w == 1 ? 0.0 : y * (in_w - 1) / (out_w - 1); break;
      case Coord::Asymmetric: x = y / scale; break;
      case Coord::TfCropAndResize:
        x = out_w == 1 ? (roi_hi - roi_lo) * (in_w - 1) / 2 : y * (roi_hi - roi_lo) * (in_w - 1) / (out_w - 1);
        x += roi_lo * (in_w - 1);
        break;
      case Coord::PytorchHalfPixel: x = out_w == 1 ? -0.5 : (y + 0.5) / scale - 0.5; break;
      case Coord::HalfPixel: x = (y + 0.5) / scale - 0.5; break;
      case Coord::TfHalfPixelForNN: x = (y + 0.5) / scale; break;
      case Coord::HalfPixelSymmetric: {
        const double adjustment = static_cast<double>(out) / out_w;
        const double offset = in_w / 2 * (1 - adjustment);
        x = offset + (y + 0.5) / scale - 0.5;
        break;
      }
    }
    Taps& t = p.taps[o];
    t.first = static_cast<int64_t>(p.idx.size());
    if (a.coord == Coord::TfCropAndResize && (x < 0 || x > in_w - 1)) continue;  // extrapolated
    const double fl = std::floor(x);
    const bool integral = x == fl;
    const double ratio = integral ? 1.0 : x - fl;
    const int64_t base = static_cast<int64_t>(fl) - (integral ? 1 : 0);  // x = base + ratio
    auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    if (a.mode == Mode::Nearest) {
      int64_t i = 0;
      if (a.nearest == NearestMode::Simple) {
        i = scale < 1 ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(fl);
      } else if (integral) {
        i = static_cast<int64_t>(x);
      } else {
        bool up = false;
        switch (a.nearest) {
          case NearestMode::RoundPreferFloor: up = ratio > 0.5; break;
          case NearestMode::RoundPreferCeil: up = ratio >= 0.5; break;
          case NearestMode::Floor: up = false; break;
          case NearestMode::Ceil: up = true; break;
          case NearestMode::Simple: break;
        }
        i = base + (up ? 1 : 0);
      }
      p.idx.push_back(clamp(i));
      p.w.push_back(1.0);
      t.count = 1;
      continue;
    }
    coeffs.clear();
    if (a.antialias) {
      const double s = std::min(scale, 1.0);
      if (a.mode == Mode::Linear) {
        const int64_t start = static_cast<int64_t>(std::floor(-1 / s) + 1);
        for (int64_t i = start; i < 2 - start; ++i)
          coeffs.push_back(std::clamp(1 - std::fabs((static_cast<double>(i) - ratio) * s), 0.0, 1.0));
      } else {
        const int64_t start = static_cast<int64_t>(std::floor(-2 / s) + 1);
        for (int64_t i = start; i < 2 - start; ++i) coeffs.push_back(cubic_weight(s * (static_cast<double>(i) - ratio), a.cubic_a));
      }
      double sum = 0;
      for (double c : coeffs) sum += c;
      for (double& c : coeffs) c /= sum;
    } else if (a.mode == Mode::Linear) {
      coeffs = {1 - ratio, ratio};
    } else {
      const double A = a.cubic_a;
      coeffs = {((A * (ratio + 1) - 5 * A) * (ratio + 1) + 8 * A) * (ratio + 1) - 4 * A,
                ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1,
                ((A + 2) * (1 - ratio) - (A + 3)) * (1 - ratio) * (1 - ratio) + 1,
                ((A * ((1 - ratio) + 1) - 5 * A) * ((1 - ratio) + 1) + 8 * A) * ((1 - ratio) + 1) - 4 * A};
    }
    const int64_t nc = static_cast<int64_t>(coeffs.size());
    const int64_t start = base - nc / 2 + 1;  // the nc nearest neighbours of x, ties to the left
    if (a.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < nc; ++k) {
        if (start + k < 0 || start + k >= in) coeffs[k] = 0;
        sum += coeffs[k];
      }
      if (sum != 0)
        for (double& c : coeffs) c /= sum;
    }
    for (int64_t k = 0; k < nc; ++k) {
      if (coeffs[k] == 0.0) continue;
      p.idx.push_back(clamp(start + k));
      p.w.push_back(coeffs[k]);
      ++t.count;
    }
    if (t.count == 0) {  // all weights zero: keep one zero tap so the point is not "extrapolated"
      p.idx.push_back(clamp(base));
      p.w.push_back(0.0);
      t.count = 1;
    }
  }
  return p;
}

bool close_to(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

// Nearest: out[o] = in[idx_0[o_0], idx_1[o_1], ...] (or the extrapolation value), rows in parallel.
template <class T>
void gather_nearest(KernelContext& ctx, const ir::Tensor& x, ir::Tensor& y, const std::vector<AxisPlan>& plans,
                    double extrapolation) {
  const size_t rank = plans.size();
  const auto in_strides = contiguous_strides(x.dims());
  // Per axis: the input offset of each output coordinate (-1: extrapolated).
  std::vector<std::vector<int64_t>> offs(rank);
  for (size_t d = 0; d < rank; ++d) {
    offs[d].resize(static_cast<size_t>(plans[d].out));
    for (int64_t o = 0; o < plans[d].out; ++o) {
      const Taps& t = plans[d].taps[o];
      offs[d][o] = t.count == 0 ? -1 : plans[d].idx[t.first] * in_strides[d];
    }
  }
  const T* src = x.data<T>().data();
  T* dst = y.mutable_data<T>().data();
  const T extra = store_rounded<T>(extrapolation);
  if (rank == 0) { dst[0] = src[0]; return; }
  const int64_t last = plans[rank - 1].out;
  const int64_t rows = y.numel() / last;
  const auto& lo = offs[rank - 1];
  const bool any_outside_last = std::any_of(lo.begin(), lo.end(), [](int64_t v) { return v < 0; });
  ctx.parallel_for(rows, last * 2, [&](int64_t b, int64_t e) {
    int64_t prev_base = -2;
    for (int64_t r = b; r < e; ++r) {
      int64_t base = 0, rem = r;
      for (size_t d = rank - 1; d-- > 0;) {
        const int64_t od = offs[d][rem % plans[d].out];
        rem /= plans[d].out;
        base = (od < 0 || base < 0) ? -1 : base + od;
      }
      T* row = dst + r * last;
      if (base < 0) {
        std::fill(row, row + last, extra);
      } else if (base == prev_base) {
        // Same source row as the previous output row (upsampling an outer axis): copy it.
        std::copy(row - last, row, row);
      } else if (any_outside_last) {
        for (int64_t j = 0; j < last; ++j) row[j] = lo[j] < 0 ? extra : src[base + lo[j]];
      } else {
        const T* s = src + base;
        for (int64_t j = 0; j < last; ++j) row[j] = s[lo[j]];
      }
      prev_base = base;
    }
  });
}

// Linear/cubic when only the last two axes are resized (1-D, 2-D and the NCHW case): one pass;
// each output row mixes the contributing input rows into a f64 row, then interpolates along
// the last axis. No full-size intermediate buffers.
template <class T>
void resample_last_two(KernelContext& ctx, const ir::Tensor& x, ir::Tensor& y, const AxisPlan& ph,
                       const AxisPlan& pw, double extrapolation) {
  const int64_t h = ph.in, w = pw.in, oh = ph.out, ow = pw.out;
  const int64_t outer = x.numel() / std::max<int64_t>(h * w, 1);
  const T* src = x.data<T>().data();
  T* dst = y.mutable_data<T>().data();
  const T extra = store_rounded<T>(extrapolation);
  ctx.parallel_for(outer * oh, (w + ow) * 8, [&](int64_t b, int64_t e) {
    std::vector<double> tmp(static_cast<size_t>(w));
    for (int64_t r = b; r < e; ++r) {
      const int64_t o = r / oh, i = r % oh;
      T* row = dst + r * ow;
      const Taps& th = ph.taps[i];
      if (th.count == 0) { std::fill(row, row + ow, extra); continue; }
      for (int64_t k = 0; k < th.count; ++k) {
        const double wk = ph.w[th.first + k];
        const T* s = src + (o * h + ph.idx[th.first + k]) * w;
        if (k == 0) for (int64_t j = 0; j < w; ++j) tmp[j] = wk * static_cast<double>(load_value(s[j]));
        else for (int64_t j = 0; j < w; ++j) tmp[j] += wk * static_cast<double>(load_value(s[j]));
      }
      for (int64_t j = 0; j < ow; ++j) {
        const Taps& tw = pw.taps[j];
        if (tw.count == 0) { row[j] = extra; continue; }
        double acc = 0;
        for (int64_t k = 0; k < tw.count; ++k) acc += pw.w[tw.first + k] * tmp[pw.idx[tw.first + k]];
        row[j] = store_rounded<T>(acc);
      }
    }
  });
}

// Linear/cubic: one separable pass along `axis` over a f64 buffer with dims `dims`.
std::vector<double> resample_axis(KernelContext& ctx, const std::vector<double>& in, const std::vector<int64_t>& dims,
                                  size_t axis, const AxisPlan& p, double extrapolation) {
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= dims[i];
  std::vector<double> out(static_cast<size_t>(outer * p.out * inner));
  ctx.parallel_for(outer * p.out, inner * 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t o = r / p.out, j = r % p.out;
      double* dst = out.data() + r * inner;
      const Taps& t = p.taps[j];
      if (t.count == 0) { std::fill(dst, dst + inner, extrapolation); continue; }
      const double* src = in.data() + o * p.in * inner;
      for (int64_t k = 0; k < t.count; ++k) {
        const double wk = p.w[t.first + k];
        const double* s = src + p.idx[t.first + k] * inner;
        if (k == 0) for (int64_t i = 0; i < inner; ++i) dst[i] = wk * s[i];
        else for (int64_t i = 0; i < inner; ++i) dst[i] += wk * s[i];
      }
    }
  });
  return out;
}

void run_resize(KernelContext& ctx, const ResizeAttrs& a) {
  const ir::Node& n = ctx.node();
  const ir::Tensor& x = ctx.in(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  const auto& in_dims = x.dims();

  // Inputs by version: Upsample-7 (X), Upsample-9/Resize-10 (X, scales), Resize-11+ (X, roi, scales, sizes).
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  const bool v11 = !a.upsample && a.since >= 11;
  if (a.upsample && a.since < 9) {
    scales.assign(a.attr_scales.begin(), a.attr_scales.end());
  } else {
    const size_t si = v11 ? 2 : 1;
    if (ctx.has_input(si) && ctx.in(si).numel() > 0)
      for (float s : read_float_tensor(n, ctx.in(si), "scales")) scales.push_back(s);
    if (v11 && ctx.has_input(3) && ctx.in(3).numel() > 0) sizes = read_int_tensor(n, ctx.in(3), "sizes");
    if (v11 && ctx.has_input(1) && ctx.in(1).numel() > 0 && a.coord == Coord::TfCropAndResize) {
      // roi keeps f64 precision when given as f64.
      if (ctx.in(1).dtype() == ir::DType::F64) for (double v : ctx.in(1).data<double>()) roi.push_back(v);
      else for (float v : read_float_tensor(n, ctx.in(1), "roi")) roi.push_back(v);
    }
  }
  if (scales.empty() == sizes.empty())
    throw ModelError(n.describe() + ": exactly one of scales and sizes must be given");

  std::vector<int64_t> axes;
  if (a.axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  } else {
    for (int64_t ax : a.axes) axes.push_back(normalize_axis(n, ax, rank));
    for (size_t i = 0; i < axes.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (axes[i] == axes[j]) throw ModelError(n.describe() + ": axes must not repeat");
  }
  const size_t na = axes.size();
  if (!scales.empty() && scales.size() != na)
    throw ModelError(n.describe() + ": scales has " + std::to_string(scales.size()) + " values, expected " + std::to_string(na));
  if (!sizes.empty() && sizes.size() != na)
    throw ModelError(n.describe() + ": sizes has " + std::to_string(sizes.size()) + " values, expected " + std::to_string(na));
  if (!roi.empty() && roi.size() != 2 * na)
    throw ModelError(n.describe() + ": roi has " + std::to_string(roi.size()) + " values, expected " + std::to_string(2 * na));

  std::vector<double> scale(rank, 1.0), roi_lo(rank, 0.0), roi_hi(rank, 1.0);
  std::vector<int64_t> out_dims = in_dims;
  for (size_t i = 0; i < na; ++i) {
    if (!roi.empty()) { roi_lo[axes[i]] = roi[i]; roi_hi[axes[i]] = roi[na + i]; }
  }
  if (!scales.empty()) {
    for (size_t i = 0; i < na; ++i) {
      if (!(scales[i] > 0)) throw ModelError(n.describe() + ": scales must be positive");
      scale[axes[i]] = scales[i];
      out_dims[axes[i]] = static_cast<int64_t>(scales[i] * static_cast<double>(in_dims[axes[i]]));
    }
  } else {
    for (size_t i = 0; i < na; ++i) {
      if (sizes[i] < 0) throw ModelError(n.describe() + ": sizes must not be negative");
      if (in_dims[axes[i]] == 0) throw ModelError(n.describe() + ": cannot resize an empty axis to a size");
      scale[axes[i]] = static_cast<double>(sizes[i]) / static_cast<double>(in_dims[axes[i]]);
      out_dims[axes[i]] = sizes[i];
    }
    if (a.policy != AspectPolicy::Stretch) {
      double s = scale[axes[0]];
      for (int64_t ax : axes) s = a.policy == AspectPolicy::NotLarger ? std::min(s, scale[ax]) : std::max(s, scale[ax]);
      for (int64_t ax : axes) {
        scale[ax] = s;
        out_dims[ax] = static_cast<int64_t>(s * static_cast<double>(in_dims[ax]) + 0.5);
      }
    }
  }

  ir::Tensor& y = ctx.alloc_output_overwritten(0, x.dtype(), out_dims);
  if (y.numel() == 0) return;
  if (x.numel() == 0) throw ModelError(n.describe() + ": cannot resize an empty input to a non-empty output");

  std::vector<AxisPlan> plans(rank);
  std::vector<bool> identity(rank, true);
  for (int64_t d = 0; d < rank; ++d) {
    identity[d] = close_to(scale[d], 1.0) && out_dims[d] == in_dims[d] && close_to(roi_lo[d], 0.0) &&
                  close_to(roi_hi[d], 1.0);
    if (identity[d]) {
      plans[d].in = plans[d].out = in_dims[d];
      for (int64_t o = 0; o < in_dims[d]; ++o) {
        plans[d].taps.push_back({o, 1});
        plans[d].idx.push_back(o);
        plans[d].w.push_back(1.0);
      }
    } else {
      plans[d] = plan_axis(a, in_dims[d], out_dims[d], scale[d], roi_lo[d], roi_hi[d]);
    }
  }

  const std::string what = n.describe() + ": " + n.op_type;
  if (a.mode == Mode::Nearest) {
    ir::dispatch<MCC_ALL_DTYPES>(x.dtype(), what, [&](auto tag) {
      gather_nearest<typename decltype(tag)::type>(ctx, x, y, plans, a.extrapolation);
    });
    return;
  }
  bool last_two = true;
  for (int64_t d = 0; d + 2 < rank; ++d) last_two = last_two && identity[d];
  if (last_two) {
    AxisPlan one;  // a unit leading axis for 1-D inputs
    one.in = one.out = 1;
    one.taps = {{0, 1}};
    one.idx = {0};
    one.w = {1.0};
    const AxisPlan& ph = rank >= 2 ? plans[rank - 2] : one;
    ir::dispatch<MCC_NUMERIC_DTYPES>(x.dtype(), what, [&](auto tag) {
      resample_last_two<typename decltype(tag)::type>(ctx, x, y, ph, plans[rank - 1], a.extrapolation);
    });
    return;
  }
  ir::dispatch<MCC_NUMERIC_DTYPES>(x.dtype(), what, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto src = x.data<T>();
    std::vector<double> buf(src.size());
    for (size_t i = 0; i < src.size(); ++i) buf[i] = static_cast<double>(load_value(src[i]));
    std::vector<int64_t> dims = in_dims;
    for (int64_t d = 0; d < rank; ++d) {
      if (identity[d]) continue;
      buf = resample_axis(ctx, buf, dims, static_cast<size_t>(d), plans[d], a.extrapolation);
      dims[d] = out_dims[d];
    }
    T* dst = y.mutable_data<T>().data();
    for (size_t i = 0; i < buf.size(); ++i) dst[i] = store_rounded<T>(buf[i]);
  });
}

KernelFactory resize_factory(bool upsample) {
  return [upsample](const ir::Node& n) -> Kernel {
    ResizeAttrs a = parse_attrs(n, upsample);
    return [a](KernelContext& ctx) { run_resize(ctx, a); };
  };
}

}  // namespace

void register_resize(KernelRegistry& r) {
  r.add("Resize", 10, 0, resize_factory(false));
  r.add("Upsample", 7, 9, resize_factory(true));
}

}  // namespace mcc::backends::cpu
