// Resize on the cuda backend, opsets 10, 11, 13, 18, 19+.
//   modes: nearest (nearest_mode round_prefer_floor / round_prefer_ceil / floor / ceil; Resize-10
//   takes floor when upsampling and ceil when downsampling) on any fixed-width type; linear on f32
//   and f16 (f32 accumulation), N-d (every resized axis interpolates between 2 neighbours).
//   coordinate_transformation_mode: half_pixel, half_pixel_symmetric, pytorch_half_pixel,
//   align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize (roi host input,
//   extrapolation_value); output from scales or sizes (host inputs), with axes and
//   keep_aspect_ratio_policy (opset 18+).
// The per-axis source coordinates are computed on the host in f64 with the cpu kernel's formulas
// (backends/cpu/kernels/resize.cpp) and uploaded as tap tables; the kernel only gathers and mixes.
// Declined: cubic, antialias, exclude_outside, types the cpu kernel lacks too (strings, sub-byte,
//   float8, complex), linear on other than f32/f16, rank above 8.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/reduce_util.h"
#include "backends/cuda/kernels/resize.h"
#include "backends/cuda/ops/data_movement.h"
#include "ir/errors.h"

namespace mcc::backends::cuda {
namespace {

using ir::Tensor;
namespace dev = ::mcc::cuda;

enum class Coord {
  HalfPixel, HalfPixelSymmetric, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNN, TfCropAndResize
};
enum class Nearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };
enum class AspectPolicy { Stretch, NotLarger, NotSmaller };

struct ResizeAttrs {
  bool linear = false;
  Coord coord = Coord::HalfPixel;
  Nearest nearest = Nearest::RoundPreferFloor;
  std::vector<int64_t> axes;  // empty: every axis
  AspectPolicy policy = AspectPolicy::Stretch;
  double extrapolation = 0.0;  // tf_crop_and_resize outside the input
};

bool parse_coord(const std::string& s, Coord* c) {
  static const std::pair<const char*, Coord> kModes[] = {
      {"half_pixel", Coord::HalfPixel},       {"half_pixel_symmetric", Coord::HalfPixelSymmetric},
      {"pytorch_half_pixel", Coord::PytorchHalfPixel}, {"align_corners", Coord::AlignCorners},
      {"asymmetric", Coord::Asymmetric},      {"tf_half_pixel_for_nn", Coord::TfHalfPixelForNN},
      {"tf_crop_and_resize", Coord::TfCropAndResize}};
  for (const auto& [name, m] : kModes)
    if (s == name) return *c = m, true;
  return false;
}

bool parse_nearest(const std::string& s, Nearest* m) {
  static const std::pair<const char*, Nearest> kModes[] = {{"round_prefer_floor", Nearest::RoundPreferFloor},
                                                           {"round_prefer_ceil", Nearest::RoundPreferCeil},
                                                           {"floor", Nearest::Floor},
                                                           {"ceil", Nearest::Ceil}};
  for (const auto& [name, v] : kModes)
    if (s == name) return *m = v, true;
  return false;
}

/// The types nearest mode moves: every numeric type and bool (what the cpu kernel dispatches on).
bool nearest_type(ir::DType dt) {
  using ir::DType;
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::U8, DType::I16, DType::U16,
                  DType::I32, DType::U32, DType::I64, DType::U64, DType::Bool})
    if (dt == t) return true;
  return false;
}

std::string check_resize(const ir::Node& n, std::span<const ir::DType> dts) {
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear") return "Resize mode " + mode;
  if (mode == "linear") {
    if (std::string why = float_inputs({0})(n, dts); !why.empty()) return why;
  } else if (dts.empty() || !nearest_type(dts[0])) {
    return "input 0 is " + ir::dtype_name(dts.empty() ? ir::DType::Undefined : dts[0]);
  }
  if (n.since_version < 11) return {};
  Coord c;
  Nearest m;
  const std::string coord = n.attr_string("coordinate_transformation_mode", "half_pixel");
  if (!parse_coord(coord, &c)) return "coordinate_transformation_mode " + coord;
  if (!parse_nearest(n.attr_string("nearest_mode", "round_prefer_floor"), &m)) return "nearest_mode";
  if (n.attr_int("antialias", 0) != 0) return "antialias";
  if (n.attr_int("exclude_outside", 0) != 0) return "exclude_outside";
  const std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return "keep_aspect_ratio_policy " + policy;
  return {};
}

ResizeAttrs parse_attrs(const ir::Node& n) {
  ResizeAttrs a;
  a.linear = n.attr_string("mode", "nearest") == "linear";
  if (n.since_version < 11) {
    a.coord = Coord::Asymmetric;
    a.nearest = Nearest::Simple;
    return a;
  }
  parse_coord(n.attr_string("coordinate_transformation_mode", "half_pixel"), &a.coord);
  parse_nearest(n.attr_string("nearest_mode", "round_prefer_floor"), &a.nearest);
  a.axes = n.attr_ints("axes");
  const std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
  a.policy = policy == "not_larger" ? AspectPolicy::NotLarger
             : policy == "not_smaller" ? AspectPolicy::NotSmaller
                                       : AspectPolicy::Stretch;
  a.extrapolation = n.attr_float("extrapolation_value", 0.0f);
  return a;
}

/// One axis of the resize: sizes, scale, region of interest, and the input stride.
struct AxisSpec {
  int64_t in = 0, out = 0, stride = 1;
  double scale = 1.0, roi_lo = 0.0, roi_hi = 1.0;
  bool identity = true;
};

/// Source coordinate of output coordinate y (the cpu kernel's formulas, in f64 with the unrounded
/// output width).
double source_coord(Coord c, double y, const AxisSpec& ax) {
  const double in_w = static_cast<double>(ax.in), scale = ax.scale, out_w = scale * in_w;
  switch (c) {
    case Coord::AlignCorners: return out_w == 1 ? 0.0 : y * (in_w - 1) / (out_w - 1);
    case Coord::Asymmetric: return y / scale;
    case Coord::PytorchHalfPixel: return out_w == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    case Coord::HalfPixel: return (y + 0.5) / scale - 0.5;
    case Coord::TfHalfPixelForNN: return (y + 0.5) / scale;
    case Coord::HalfPixelSymmetric: {
      const double adjustment = static_cast<double>(ax.out) / out_w;
      return in_w / 2 * (1 - adjustment) + (y + 0.5) / scale - 0.5;
    }
    case Coord::TfCropAndResize: {
      const double span = ax.roi_hi - ax.roi_lo;
      const double x = out_w == 1 ? span * (in_w - 1) / 2 : y * span * (in_w - 1) / (out_w - 1);
      return x + ax.roi_lo * (in_w - 1);
    }
  }
  return 0.0;
}

/// Input index of nearest-mode coordinate x.
int64_t nearest_index(const ResizeAttrs& a, double x, double scale) {
  const double fl = std::floor(x);
  if (a.nearest == Nearest::Simple) return scale < 1 ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(fl);
  if (x == fl) return static_cast<int64_t>(x);
  const double ratio = x - fl;
  const bool up = a.nearest == Nearest::Ceil || (a.nearest == Nearest::RoundPreferFloor && ratio > 0.5) ||
                  (a.nearest == Nearest::RoundPreferCeil && ratio >= 0.5);
  return static_cast<int64_t>(fl) + (up ? 1 : 0);
}

/// Appends the taps of one axis (taps per output coordinate: 1 when nearest or not resized,
/// else 2) to the tables; offsets are input indices times the stride, -1 outside the input.
int append_axis(const ResizeAttrs& a, const AxisSpec& ax, std::vector<int64_t>& offsets, std::vector<float>& weights) {
  auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, ax.in - 1) * ax.stride; };
  const int taps = ax.identity || !a.linear ? 1 : 2;
  for (int64_t o = 0; o < ax.out; ++o) {
    if (ax.identity) {
      offsets.push_back(o * ax.stride);
      weights.push_back(1.f);
      continue;
    }
    const double x = source_coord(a.coord, static_cast<double>(o), ax);
    if (a.coord == Coord::TfCropAndResize && (x < 0 || x > static_cast<double>(ax.in) - 1)) {
      offsets.insert(offsets.end(), static_cast<size_t>(taps), -1);
      weights.insert(weights.end(), static_cast<size_t>(taps), 0.f);
      continue;
    }
    if (!a.linear) {
      offsets.push_back(clamp(nearest_index(a, x, ax.scale)));
      weights.push_back(1.f);
      continue;
    }
    const double fl = std::floor(x);
    const bool integral = x == fl;
    const double ratio = integral ? 1.0 : x - fl;
    const int64_t base = static_cast<int64_t>(fl) - (integral ? 1 : 0);  // x = base + ratio
    offsets.push_back(clamp(base));
    weights.push_back(static_cast<float>(1 - ratio));
    offsets.push_back(clamp(base + 1));
    weights.push_back(static_cast<float>(ratio));
  }
  return taps;
}

bool close_to(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

/// The roi input as f64 (an f64 roi keeps its precision).
std::vector<double> read_roi(const ir::Node& n, const Tensor& t) {
  if (t.dtype() == ir::DType::F64) {
    const auto v = t.data<double>();
    return {v.begin(), v.end()};
  }
  const auto v = cpu::read_float_tensor(n, t, "roi");
  return {v.begin(), v.end()};
}

/// The resized axes: the axes attribute normalized, or every axis.
std::vector<size_t> resized_axes(const ir::Node& n, const ResizeAttrs& a, size_t rank) {
  std::vector<size_t> axes;
  if (a.axes.empty())
    for (size_t d = 0; d < rank; ++d) axes.push_back(d);
  for (int64_t ax : a.axes) {
    const auto d = static_cast<size_t>(cpu::normalize_axis(n, ax, static_cast<int64_t>(rank)));
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) throw ModelError(n.describe() + ": axes must not repeat");
    axes.push_back(d);
  }
  return axes;
}

/// Output dims and per-axis scales from the scales or sizes host input (the cpu kernel's rules,
/// keep_aspect_ratio_policy included).
void output_geometry(const KernelContext& ctx, const ResizeAttrs& a, const std::vector<int64_t>& in_dims,
                     std::vector<int64_t>& out_dims, std::vector<double>& scale, std::vector<double>& roi) {
  const ir::Node& n = ctx.node();
  const bool v11 = n.since_version >= 11;
  const size_t si = v11 ? 2 : 1;
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (ctx.has_input(si) && ctx.in(si).numel() > 0)
    for (float s : cpu::read_float_tensor(n, ctx.in(si), "scales")) scales.push_back(s);
  if (v11 && ctx.has_input(3) && ctx.in(3).numel() > 0) sizes = cpu::read_int_tensor(n, ctx.in(3), "sizes");
  if (scales.empty() == sizes.empty()) throw ModelError(n.describe() + ": exactly one of scales and sizes must be given");
  const std::vector<size_t> axes = resized_axes(n, a, in_dims.size());
  if ((!scales.empty() && scales.size() != axes.size()) || (!sizes.empty() && sizes.size() != axes.size()))
    throw ModelError(n.describe() + ": scales or sizes need one value per resized axis");
  roi.clear();
  if (v11 && a.coord == Coord::TfCropAndResize && ctx.has_input(1) && ctx.in(1).numel() > 0) {
    const std::vector<double> r = read_roi(n, ctx.in(1));
    if (r.size() != 2 * axes.size()) throw ModelError(n.describe() + ": roi needs two values per resized axis");
    roi.assign(2 * in_dims.size(), 0.0);
    for (size_t d = 0; d < in_dims.size(); ++d) roi[in_dims.size() + d] = 1.0;
    for (size_t i = 0; i < axes.size(); ++i) {
      roi[axes[i]] = r[i];
      roi[in_dims.size() + axes[i]] = r[axes.size() + i];
    }
  }
  out_dims = in_dims;
  scale.assign(in_dims.size(), 1.0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t d = axes[i];
    if (!scales.empty()) {
      if (!(scales[i] > 0)) throw ModelError(n.describe() + ": scales must be positive");
      scale[d] = scales[i];
      out_dims[d] = static_cast<int64_t>(scales[i] * static_cast<double>(in_dims[d]));
    } else {
      if (sizes[i] < 0) throw ModelError(n.describe() + ": sizes must not be negative");
      if (in_dims[d] == 0) throw ModelError(n.describe() + ": cannot resize an empty axis to a size");
      scale[d] = static_cast<double>(sizes[i]) / static_cast<double>(in_dims[d]);
      out_dims[d] = sizes[i];
    }
  }
  if (sizes.empty() || a.policy == AspectPolicy::Stretch) return;
  double s = scale[axes[0]];
  for (size_t d : axes) s = a.policy == AspectPolicy::NotLarger ? std::min(s, scale[d]) : std::max(s, scale[d]);
  for (size_t d : axes) {
    scale[d] = s;
    out_dims[d] = static_cast<int64_t>(s * static_cast<double>(in_dims[d]) + 0.5);
  }
}

/// The extrapolation value as one element of dt (rounded and saturated as the cpu stores it).
uint64_t extrapolation_bits(const ir::Node& n, ir::DType dt, double v) {
  Tensor t = Tensor::allocate(dt, {1});
  ir::dispatch<MCC_ALL_DTYPES>(dt, n.describe() + ": Resize extrapolation_value", [&](auto tag) {
    using T = typename decltype(tag)::type;
    t.mutable_data<T>()[0] = cpu::store_rounded<T>(v);
  });
  return element_bits(t);
}

void run_resize(KernelContext& ctx, const ResizeAttrs& a) {
  const ir::Node& n = ctx.node();
  const Tensor& x = ctx.in(0);
  const size_t rank = x.rank();
  if (rank > static_cast<size_t>(dev::kMaxResizeRank))
    throw ModelError(n.describe() + ": the cuda Resize handles rank <= 8");
  std::vector<int64_t> out_dims;
  std::vector<double> scale, roi;
  output_geometry(ctx, a, x.dims(), out_dims, scale, roi);
  Tensor& y = ctx.alloc_output(0, x.dtype(), out_dims);
  if (y.numel() == 0) return;
  if (x.numel() == 0) throw ModelError(n.describe() + ": cannot resize an empty input to a non-empty output");
  const auto strides = cpu::contiguous_strides(x.dims());
  dev::ResizeGeometry g;
  g.rank = static_cast<int>(rank);
  std::vector<int64_t> offsets;
  std::vector<float> weights;
  for (size_t d = 0; d < rank; ++d) {
    AxisSpec ax{x.dims()[d], out_dims[d], strides[d], scale[d]};
    if (!roi.empty()) ax.roi_lo = roi[d], ax.roi_hi = roi[rank + d];
    ax.identity = close_to(ax.scale, 1.0) && ax.out == ax.in && close_to(ax.roi_lo, 0.0) && close_to(ax.roi_hi, 1.0);
    g.out_dims[d] = out_dims[d];
    g.table_start[d] = static_cast<int64_t>(offsets.size());
    g.taps[d] = append_axis(a, ax, offsets, weights);
  }
  const auto count = static_cast<int64_t>(offsets.size());
  const Tensor dev_offsets = ctx.backend().upload(Tensor::from_vector<int64_t>({count}, offsets));
  const auto* off = static_cast<const int64_t*>(dev_offsets.device_data());
  if (!a.linear) {
    dev::resize_nearest(x.device_data(), y.mutable_device_data(), g, off, extrapolation_bits(n, x.dtype(), a.extrapolation),
                        elem_width(x.dtype()));
    return;
  }
  const Tensor dev_weights = ctx.backend().upload(Tensor::from_vector<float>({count}, weights));
  dev::resize_linear(x.device_data(), y.mutable_device_data(), g, off,
                     static_cast<const float*>(dev_weights.device_data()), static_cast<float>(a.extrapolation),
                     x.dtype() == ir::DType::F16 ? dev::ResizeElem::F16 : dev::ResizeElem::F32);
}

Kernel make_resize(const ir::Node& n) {
  const ResizeAttrs a = parse_attrs(n);
  return [a](KernelContext& ctx) { run_resize(ctx, a); };
}

}  // namespace

void register_resize(OpTable& t) {
  const NodeCheck check = all_of({check_resize, rank_at_most(0, 8)});
  t.add("Resize", 10, 10, make_resize, check, {1});
  t.add("Resize", 11, 0, make_resize, check, {1, 2, 3});
}

}  // namespace mcc::backends::cuda
