// The cuda backend's Conv against the cpu: im2col, pointwise (1x1) and depthwise paths; groups,
// strides, dilations, asymmetric pads, auto_pad VALID/SAME_UPPER/SAME_LOWER; 1-D, 2-D and 3-D;
// bias or not; f16; empty batches; and what stays on the cpu.
#include <doctest/doctest.h>

#include "backends/cuda/cuda_test_util.h"

using namespace mcc;
using namespace mcc::test;
using namespace mcc::test::cuda_test;

namespace {

struct ConvCase {
  std::vector<int64_t> x, w;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;
  std::string auto_pad;
  bool bias = true;
  int opset = 11;
};

void check_conv(ir::DType dt, const ConvCase& c) {
  INFO("dtype " << ir::dtype_name(dt) << " X rank " << c.x.size() << " W dims " << c.w[0] << "x" << c.w[1]
                << " group " << c.group << " auto_pad " << c.auto_pad);
  OpTest t("Conv", c.opset);
  if (c.group != 1) t.i("group", c.group);
  if (!c.strides.empty()) t.is("strides", c.strides);
  if (!c.dilations.empty()) t.is("dilations", c.dilations);
  if (!c.pads.empty()) t.is("pads", c.pads);
  if (!c.auto_pad.empty()) t.s("auto_pad", c.auto_pad);
  t.in(random_of(dt, c.x, 21)).in(random_of(dt, c.w, 22));
  if (c.bias) t.in(random_of(dt, {c.w[0]}, 23));
  check_on_cuda(t, "Conv");
}

void check_both(const ConvCase& c) {
  check_conv(ir::DType::F32, c);
  check_conv(ir::DType::F16, c);
}

}  // namespace

TEST_SUITE("cuda-emulated") {
  TEST_CASE("cuda Conv: im2col path with pads, strides, dilations") {
    check_both({{2, 5, 7, 9}, {4, 5, 3, 3}, 1, {}, {}, {1, 1, 1, 1}});
    check_both({{2, 5, 7, 9}, {4, 5, 3, 3}, 1, {2, 2}, {}, {}});
    check_both({{2, 5, 13, 9}, {3, 5, 3, 2}, 1, {2, 1}, {2, 3}, {0, 1, 2, 1}});
    check_both({{1, 3, 11, 7}, {6, 3, 5, 3}, 1, {1, 2}, {1, 1}, {2, 0, 1, 3}, "", false});
    check_conv(ir::DType::F32, {{3, 2, 5, 5}, {2, 2, 5, 5}, 1, {}, {}, {}, "", true, 1});  // opset 1
  }

  TEST_CASE("cuda Conv: auto_pad VALID, SAME_UPPER, SAME_LOWER") {
    for (const char* pad : {"VALID", "SAME_UPPER", "SAME_LOWER", "NOTSET"}) {
      check_both({{2, 3, 7, 10}, {4, 3, 3, 4}, 1, {2, 3}, {}, {}, pad});
      check_both({{1, 4, 9, 8}, {4, 2, 2, 3}, 2, {1, 1}, {2, 1}, {}, pad});
    }
  }

  TEST_CASE("cuda Conv: groups") {
    check_both({{2, 6, 7, 9}, {4, 3, 3, 3}, 2, {}, {}, {1, 1, 1, 1}});
    check_both({{2, 6, 8, 5}, {9, 2, 3, 3}, 3, {2, 1}, {1, 2}, {1, 0, 0, 2}});
    check_both({{1, 6, 5, 5}, {6, 3, 1, 1}, 2});  // pointwise with groups
  }

  TEST_CASE("cuda Conv: pointwise (1x1) path and 1x1 with stride or pads") {
    check_both({{3, 5, 7, 9}, {13, 5, 1, 1}});
    check_both({{3, 5, 7, 9}, {13, 5, 1, 1}, 1, {}, {}, {}, "", false});
    check_both({{2, 5, 7, 9}, {4, 5, 1, 1}, 1, {2, 2}});
    check_both({{2, 5, 7, 9}, {4, 5, 1, 1}, 1, {}, {}, {1, 0, 0, 1}});
  }

  TEST_CASE("cuda Conv: depthwise path") {
    check_both({{2, 5, 7, 9}, {5, 1, 3, 3}, 5, {}, {}, {1, 1, 1, 1}});
    check_both({{2, 5, 7, 9}, {5, 1, 3, 3}, 5, {2, 2}, {}, {0, 1, 1, 0}});
    check_both({{1, 4, 9, 9}, {4, 1, 5, 5}, 4, {}, {2, 2}, {}, "SAME_UPPER"});
    check_both({{2, 3, 6, 7}, {6, 1, 3, 3}, 3, {1, 2}, {}, {1, 1, 1, 1}});  // channel multiplier 2
    check_both({{1, 5, 6, 6}, {5, 1, 3, 3}, 5, {}, {}, {}, "", false});
  }

  TEST_CASE("cuda Conv: 1-D and 3-D") {
    check_both({{2, 3, 11}, {4, 3, 3}, 1, {2}, {}, {1, 2}});
    check_both({{2, 4, 11}, {4, 1, 5}, 4, {}, {2}, {2, 2}});
    check_both({{1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, 1, {1, 2, 1}, {}, {1, 0, 1, 1, 1, 0}});
    check_both({{1, 3, 4, 5, 6}, {3, 1, 3, 3, 3}, 3, {}, {}, {}, "SAME_LOWER"});
  }

  TEST_CASE("cuda Conv: empty batch and kernel_shape attribute") {
    check_both({{0, 3, 7, 7}, {4, 3, 3, 3}});
    check_both({{0, 3, 7, 7}, {3, 1, 3, 3}, 3});
    OpTest t("Conv", 11);
    t.is("kernel_shape", {3, 3}).in(random_of(ir::DType::F32, {1, 2, 6, 6}, 1))
        .in(random_of(ir::DType::F32, {3, 2, 3, 3}, 2));
    check_on_cuda(t, "Conv");
  }

  TEST_CASE("cuda Conv: a large image is im2col'd in chunks of images") {
    check_conv(ir::DType::F32, {{5, 8, 33, 35}, {16, 8, 3, 3}, 1, {}, {}, {1, 1, 1, 1}});
  }

  TEST_CASE("cuda Conv: declined dtypes and attributes stay on the cpu") {
    OpTest t("Conv", 11);
    t.in(tensor<double>({1, 1, 3, 3}, std::vector<double>(9, 1.0))).in(tensor<double>({1, 1, 2, 2}, {1, 2, 3, 4}));
    check_declined(t);
    CHECK_FALSE(support_of("Conv", 11, {ir::DType::F32, ir::DType::F16}).ok);
    CHECK_FALSE(support_of("Conv", 11, {ir::DType::F32, ir::DType::Undefined}).ok);
    CHECK_FALSE(support_of("Conv", 11, {ir::DType::I8, ir::DType::I8}).ok);
    CHECK_FALSE(support_of("Conv", 11, {ir::DType::F32, ir::DType::F32}, {attr_s("auto_pad", "SAME")}).ok);
    CHECK(support_of("Conv", 11, {ir::DType::F16, ir::DType::F16, ir::DType::F16}).ok);
  }
}
