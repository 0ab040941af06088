// ImageDecoder on hand-built BMP, PNM and TIFF files (formats read without a library), pixel
// formats RGB/BGR/Grayscale, and the errors for unknown or broken data. JPEG and PNG (libjpeg,
// libpng) are covered by the ONNX conformance cases.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/op_test.h"

using namespace mcc;
using namespace mcc::test;

namespace {
void put(std::vector<uint8_t>& b, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
/// A 2x2 24-bit bottom-up BMP: top row red, green; bottom row blue, white.
std::vector<uint8_t> bmp_2x2() {
  std::vector<uint8_t> b{'B', 'M'};
  put(b, 70, 4);
  put(b, 0, 4);
  put(b, 54, 4);  // file header
  put(b, 40, 4);
  put(b, 2, 4);
  put(b, 2, 4);
  put(b, 1, 2);
  put(b, 24, 2);
  put(b, 0, 4);
  put(b, 16, 4);
  put(b, 2835, 4);
  put(b, 2835, 4);
  put(b, 0, 4);
  put(b, 0, 4);
  // Rows bottom-up, BGR, padded to 8 bytes.
  for (uint8_t v : {255, 0, 0, 255, 255, 255, 0, 0}) b.push_back(v);  // blue, white
  for (uint8_t v : {0, 0, 255, 0, 255, 0, 0, 0}) b.push_back(v);      // red, green
  return b;
}
ir::Tensor bytes(const std::vector<uint8_t>& b) { return vec<uint8_t>(b); }
ir::Tensor bytes(const std::string& s) {
  return vec<uint8_t>(std::vector<uint8_t>(s.begin(), s.end()));
}
}  // namespace

TEST_CASE("ImageDecoder reads BMP as RGB, BGR and Grayscale") {
  const auto x = bytes(bmp_2x2());
  check_tensor(OpTest("ImageDecoder", 20).in(x).run1(), {2, 2, 3},
               {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255});
  check_tensor(OpTest("ImageDecoder", 20).s("pixel_format", "BGR").in(x).run1(), {2, 2, 3},
               {0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255});
  // Pillow's L weights: red (19595 * 255 + 32768) >> 16 = 76, green 150, blue 29, white 255.
  check_tensor(OpTest("ImageDecoder", 20).s("pixel_format", "Grayscale").in(x).run1(), {2, 2, 1},
               {76, 150, 29, 255});
}

TEST_CASE("ImageDecoder reads binary and ASCII PNM") {
  std::string p6 = "P6\n# comment\n2 1\n255\n";
  p6 += std::string("\x01\x02\x03\xff\x80\x00", 6);
  check_tensor(OpTest("ImageDecoder", 20).in(bytes(p6)).run1(), {1, 2, 3}, {1, 2, 3, 255, 128, 0});
  // P2 grey with maxval 15: 15 -> 255, 5 -> 85.
  check_tensor(OpTest("ImageDecoder", 20).in(bytes(std::string("P2 2 1 15 15 5"))).run1(),
               {1, 2, 3}, {255, 255, 255, 85, 85, 85});
}

TEST_CASE("ImageDecoder reads an uncompressed little-endian TIFF") {
  // 2x1 RGB, one strip at offset 8, IFD after it.
  std::vector<uint8_t> t{'I', 'I', 42, 0};
  put(t, 14, 4);
  for (uint8_t v : {10, 20, 30, 40, 50, 60}) t.push_back(v);
  const uint32_t entries[][3] = {{256, 3, 2}, {257, 3, 1}, {259, 3, 1}, {262, 3, 2},
                                 {273, 4, 8}, {277, 3, 3}, {278, 3, 1}, {279, 4, 6}};
  put(t, 8, 2);
  for (const auto& e : entries) {
    put(t, e[0], 2);
    put(t, e[1], 2);
    put(t, 1, 4);
    put(t, e[2], 4);
  }
  put(t, 0, 4);
  check_tensor(OpTest("ImageDecoder", 20).in(bytes(t)).run1(), {1, 2, 3}, {10, 20, 30, 40, 50, 60});
}

TEST_CASE("ImageDecoder rejects unknown formats, truncated data and bad attributes") {
  CHECK_THROWS_AS(OpTest("ImageDecoder", 20).in(bytes(std::string("GIF89a......"))).run1(),
                  UnsupportedError);
  auto cut = bmp_2x2();
  cut.resize(60);
  CHECK_THROWS_AS(OpTest("ImageDecoder", 20).in(bytes(cut)).run1(), ModelError);
  CHECK_THROWS_AS(OpTest("ImageDecoder", 20).s("pixel_format", "CMYK").in(bytes(bmp_2x2())).run1(),
                  ModelError);
  CHECK_THROWS_AS(OpTest("ImageDecoder", 20).in(vec<float>({1})).run1(), ModelError);
}
