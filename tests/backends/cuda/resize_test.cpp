// The cuda backend's Resize against the cpu: nearest with every nearest_mode, linear with every
// accepted coordinate_transformation_mode on f32 and f16, scales and sizes, up- and downsampling,
// Resize-10, N-d linear, axes and keep_aspect_ratio_policy, tf_crop_and_resize, nearest on integer data, empty
// outputs, and what stays on the cpu.
#include <doctest/doctest.h>

#include "backends/cuda/cuda_test_util.h"

using namespace mcc;
using namespace mcc::test;
using namespace mcc::test::cuda_test;

namespace {

const char* const kCoordModes[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                   "asymmetric", "tf_half_pixel_for_nn"};

/// Resize-13+ of x by scales (sizes empty) or sizes.
OpTest resize(int opset, const ir::Tensor& x, const std::vector<float>& scales, const std::vector<int64_t>& sizes) {
  OpTest t("Resize", opset);
  t.in(x).none();
  if (sizes.empty()) t.in(vec<float>(scales));
  else t.none().in(vec<int64_t>(sizes));
  return t;
}

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("cuda Resize nearest: every nearest_mode and coordinate mode, up and down") {
    const ir::Tensor x = random_of(ir::DType::F32, {1, 2, 5, 7}, 11);
    for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
      for (const char* cm : kCoordModes) {
        INFO("nearest_mode " << nm << " coordinate_transformation_mode " << cm);
        check_on_cuda(resize(13, x, {1, 1, 2, 1.5f}, {}).s("nearest_mode", nm).s("coordinate_transformation_mode", cm),
                      "Resize");
        check_on_cuda(resize(19, x, {}, {1, 2, 3, 4}).s("nearest_mode", nm).s("coordinate_transformation_mode", cm),
                      "Resize");
        check_on_cuda(resize(11, x, {}, {2, 3, 9, 1}).s("nearest_mode", nm).s("coordinate_transformation_mode", cm),
                      "Resize");
      }
  }

  TEST_CASE("cuda Resize nearest on integer, bool and f16 data") {
    for (ir::DType dt : {ir::DType::I64, ir::DType::U8, ir::DType::I32, ir::DType::F16, ir::DType::Bool}) {
      INFO("dtype " << ir::dtype_name(dt));
      ir::Tensor x;
      if (dt == ir::DType::Bool) x = bools({2, 3}, {1, 0, 0, 1, 1, 0});
      else if (dt == ir::DType::F16) x = random_of(dt, {2, 3}, 4);
      else if (dt == ir::DType::U8) x = tensor<uint8_t>({2, 3}, {1, 200, 3, 4, 5, 255});
      else if (dt == ir::DType::I32) x = tensor<int32_t>({2, 3}, {1, -2, 3, -4, 5, -6});
      else x = tensor<int64_t>({2, 3}, {1, -2, 3, -4, 5, -6});
      check_on_cuda(resize(13, x, {2.f, 3.f}, {}), "Resize");
      check_on_cuda(resize(13, x, {}, {3, 2}).s("nearest_mode", "ceil"), "Resize");
    }
  }

  TEST_CASE("cuda Resize linear: every coordinate mode, f32 and f16, scales and sizes") {
    for (ir::DType dt : {ir::DType::F32, ir::DType::F16}) {
      const ir::Tensor x = random_of(dt, {2, 3, 6, 5}, 7);
      for (const char* cm : kCoordModes) {
        INFO("dtype " << ir::dtype_name(dt) << " coordinate_transformation_mode " << cm);
        check_on_cuda(resize(13, x, {1, 1, 2.5f, 1.7f}, {}).s("mode", "linear").s("coordinate_transformation_mode", cm),
                      "Resize");
        check_on_cuda(resize(13, x, {1, 1, 0.5f, 0.6f}, {}).s("mode", "linear").s("coordinate_transformation_mode", cm),
                      "Resize");
        check_on_cuda(resize(18, x, {}, {2, 3, 1, 9}).s("mode", "linear").s("coordinate_transformation_mode", cm),
                      "Resize");
      }
    }
  }

  TEST_CASE("cuda Resize linear on every axis (N-d) and 1-D") {
    check_on_cuda(resize(13, random_of(ir::DType::F32, {3, 4, 5}, 3), {2.f, 0.5f, 1.5f}, {}).s("mode", "linear"), "Resize");
    check_on_cuda(resize(13, random_of(ir::DType::F32, {9}, 3), {}, {4}).s("mode", "linear"), "Resize");
    check_on_cuda(resize(13, random_of(ir::DType::F16, {1, 1, 33, 17}, 3), {}, {1, 1, 64, 40})
                      .s("mode", "linear")
                      .s("coordinate_transformation_mode", "align_corners"),
                  "Resize");
  }

  TEST_CASE("cuda Resize axes and keep_aspect_ratio_policy (opset 18+)") {
    const ir::Tensor x = random_of(ir::DType::F32, {1, 2, 4, 6}, 8);
    for (const char* mode : {"nearest", "linear"}) {
      INFO("mode " << mode);
      check_on_cuda(resize(18, x, {}, {3, 5}).s("mode", mode).is("axes", {2, 3}), "Resize");
      check_on_cuda(resize(18, x, {}, {5, 3}).s("mode", mode).is("axes", {-1, -2}), "Resize");
      check_on_cuda(resize(18, x, {2.f, 0.5f}, {}).s("mode", mode).is("axes", {3, 1}), "Resize");
      for (const char* policy : {"not_larger", "not_smaller"}) {
        INFO("policy " << policy);
        check_on_cuda(resize(18, x, {}, {1, 2, 7, 9}).s("mode", mode).s("keep_aspect_ratio_policy", policy), "Resize");
        check_on_cuda(resize(18, x, {}, {3, 8}).s("mode", mode).is("axes", {2, 3}).s("keep_aspect_ratio_policy", policy),
                      "Resize");
      }
    }
  }

  TEST_CASE("cuda Resize tf_crop_and_resize: roi, extrapolation, axes") {
    const ir::Tensor x = random_of(ir::DType::F32, {1, 2, 5, 6}, 12);
    const ir::Tensor roi = vec<float>({0, 0, 0.4f, -0.2f, 1, 1, 1.3f, 0.8f});
    for (const char* mode : {"nearest", "linear"}) {
      INFO("mode " << mode);
      auto crop = [&](int opset) {
        OpTest t("Resize", opset);
        t.s("mode", mode).s("coordinate_transformation_mode", "tf_crop_and_resize");
        return t;
      };
      check_on_cuda(crop(13).in(x).in(roi).none().in(vec<int64_t>({1, 2, 7, 4})), "Resize");
      check_on_cuda(crop(13).f("extrapolation_value", -2.5f).in(x).in(roi).in(vec<float>({1, 1, 1.5f, 0.5f})), "Resize");
      check_on_cuda(crop(18).is("axes", {3, 2}).in(x).in(vec<double>({0.1, -0.5, 1.2, 0.9})).none().in(vec<int64_t>({3, 8})),
                    "Resize");
      check_on_cuda(crop(13).f("extrapolation_value", 7.f).in(random_of(ir::DType::F16, {2, 4}, 3))
                        .in(vec<float>({-0.5f, 0.2f, 1.5f, 0.7f})).none().in(vec<int64_t>({5, 1})),
                    "Resize");
    }
    check_on_cuda(OpTest("Resize", 13).s("coordinate_transformation_mode", "tf_crop_and_resize").f("extrapolation_value", 300.f)
                      .in(tensor<uint8_t>({2, 3}, {1, 2, 3, 4, 5, 6})).in(vec<float>({-1, 0, 2, 1})).none().in(vec<int64_t>({5, 4})),
                  "Resize");
  }

  TEST_CASE("cuda Resize-10 (asymmetric) and empty outputs") {
    const ir::Tensor x = random_of(ir::DType::F32, {1, 1, 4, 6}, 5);
    check_on_cuda(OpTest("Resize", 10).in(x).in(vec<float>({1, 1, 2, 3})), "Resize");
    check_on_cuda(OpTest("Resize", 10).in(x).in(vec<float>({1, 1, 0.6f, 0.5f})), "Resize");
    check_on_cuda(OpTest("Resize", 10).s("mode", "linear").in(x).in(vec<float>({1, 1, 1.5f, 0.7f})), "Resize");
    check_on_cuda(resize(13, x, {1, 1, 0.1f, 2}, {}), "Resize");
    check_on_cuda(resize(13, random_of(ir::DType::F32, {0, 2, 3}, 1), {1, 2, 2}, {}).s("mode", "linear"), "Resize");
  }

  TEST_CASE("cuda Resize declines what it does not implement") {
    const ir::Tensor x = random_of(ir::DType::F32, {1, 1, 4, 4}, 2);
    check_declined(resize(13, x, {1, 1, 2, 2}, {}).s("mode", "cubic"));
    check_declined(resize(18, x, {1, 1, 0.5f, 0.5f}, {}).s("mode", "linear").i("antialias", 1));
    check_declined(resize(13, x, {1, 1, 2, 2}, {}).s("mode", "linear").i("exclude_outside", 1));
    check_declined(resize(13, tensor<int32_t>({1, 2}, {1, 2}), {1, 2}, {}).s("mode", "linear"));
    CHECK(!support_of("Resize", 13, {ir::DType::F8E4M3FN, ir::DType::Undefined, ir::DType::F32}).ok);
    CHECK(!support_of("Resize", 13, {ir::DType::C64, ir::DType::Undefined, ir::DType::F32}).ok);
    CHECK(support_of("Resize", 13, {ir::DType::U16, ir::DType::Undefined, ir::DType::F32}).ok);
  }
}
