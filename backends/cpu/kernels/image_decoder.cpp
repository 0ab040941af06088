// ImageDecoder (opset 20+): decodes one encoded image (a 1-D u8 tensor) to u8 [H, W, C] with
// pixel_format RGB (C=3, default), BGR (C=3) or Grayscale (C=1).
// Formats, detected from the leading bytes:
//   JPEG  through libjpeg-turbo (MCC_HAVE_LIBJPEG), default decoder settings (islow IDCT, fancy
//         upsampling), as Pillow, which ONNX's reference uses;
//   PNG   through libpng's simplified API (MCC_HAVE_LIBPNG), 8 bits per channel, alpha dropped;
//   BMP   read here: uncompressed 24/32-bit (BI_RGB) and 1/4/8-bit palette images, either row
//   order; PNM   read here: P2/P3 (ASCII) and P5/P6 (binary) grey/RGB, maxval <= 255 (rescaled to
//   255); TIFF  read here: baseline uncompressed strips (Pillow's default), 8-bit RGB(A) or grey,
//   either
//         byte order.
// Grayscale converts RGB with Pillow's "L" weights, (19595 R + 38470 G + 7471 B + 2^15) >> 16.
// The two libraries are Debian -dev packages (libjpeg62-turbo-dev, libpng-dev) that CMake links
// when found; without them those formats raise UnsupportedError. They are worth the dependency:
// writing a bit-exact JPEG decoder or an inflate implementation here would be far larger than this
// file, and both libraries are ubiquitous, stable C ABIs.
// Not supported (UnsupportedError): JPEG 2000, WebP, compressed TIFF, 16-bit PNM/TIFF.
// dtypes: u8 in, u8 out. No arithmetic beyond the grey conversion (integer).
#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifdef MCC_HAVE_LIBJPEG
#include <jpeglib.h>
#endif
#ifdef MCC_HAVE_LIBPNG
#include <png.h>
#endif

#include "backends/cpu/kernels/misc_util.h"

namespace mcc::backends::cpu {
namespace {

/// A decoded 8-bit RGB image.
struct Rgb {
  int64_t h = 0, w = 0;
  std::vector<uint8_t> px;  // h * w * 3
};

[[noreturn]] void bad_image(const std::string& fmt, const std::string& why) {
  throw ModelError("ImageDecoder: invalid " + fmt + " data: " + why);
}

// ---------------------------------------------------------------------------- JPEG

#ifdef MCC_HAVE_LIBJPEG
struct JpegErr {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegErr*>(c->err);
  (*c->err->format_message)(c, e->msg);
  std::longjmp(e->jump, 1);
}

/// Decodes into `out`; returns false with e.msg set on a libjpeg error. No C++ objects with
/// destructors live between setjmp and longjmp (out is resized before).
bool jpeg_decode_raw(const uint8_t* data, size_t n, Rgb& out, JpegErr& e) {
  jpeg_decompress_struct c;
  c.err = jpeg_std_error(&e.mgr);
  e.mgr.error_exit = jpeg_fail;
  e.msg[0] = '\0';
  if (setjmp(e.jump)) {
    jpeg_destroy_decompress(&c);
    return false;
  }
  jpeg_create_decompress(&c);
  jpeg_mem_src(&c, data, static_cast<unsigned long>(n));
  jpeg_read_header(&c, TRUE);
  c.out_color_space = JCS_RGB;
  jpeg_calc_output_dimensions(&c);
  if (c.output_width > (1u << 16) || c.output_height > (1u << 16)) {
    std::snprintf(e.msg, sizeof e.msg, "image of %u x %u is too large", c.output_width,
                  c.output_height);
    jpeg_destroy_decompress(&c);
    return false;
  }
  out.h = c.output_height;
  out.w = c.output_width;
  out.px.resize(static_cast<size_t>(out.h * out.w * 3));  // may throw before decoding starts: fine
  jpeg_start_decompress(&c);
  while (c.output_scanline < c.output_height) {
    JSAMPROW row =
        out.px.data() + static_cast<size_t>(c.output_scanline) * static_cast<size_t>(out.w) * 3;
    jpeg_read_scanlines(&c, &row, 1);
  }
  jpeg_finish_decompress(&c);
  jpeg_destroy_decompress(&c);
  return true;
}

Rgb decode_jpeg(const uint8_t* data, size_t n) {
  Rgb out;
  JpegErr e;
  if (!jpeg_decode_raw(data, n, out, e)) bad_image("JPEG", e.msg);
  return out;
}
#endif

// ---------------------------------------------------------------------------- PNG

#ifdef MCC_HAVE_LIBPNG
Rgb decode_png(const uint8_t* data, size_t n) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, data, n)) bad_image("PNG", img.message);
  img.format = PNG_FORMAT_RGB;
  Rgb out;
  out.h = img.height;
  out.w = img.width;
  out.px.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, out.px.data(), 0, nullptr)) {
    const std::string msg = img.message;
    png_image_free(&img);
    bad_image("PNG", msg);
  }
  return out;
}
#endif

// ---------------------------------------------------------------------------- BMP

uint32_t le(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Rgb decode_bmp(const uint8_t* d, size_t n) {
  if (n < 54) bad_image("BMP", "truncated header");
  const uint32_t off = le(d + 10, 4), hsize = le(d + 14, 4);
  if (hsize < 40) bad_image("BMP", "only BITMAPINFOHEADER and later headers are supported");
  const auto w = static_cast<int32_t>(le(d + 18, 4));
  const auto hs = static_cast<int32_t>(le(d + 22, 4));
  const uint32_t bpp = le(d + 28, 2), comp = le(d + 30, 4);
  uint32_t ncolors = le(d + 46, 4);
  if (comp != 0 && !(comp == 3 && bpp == 32))
    throw UnsupportedError("ImageDecoder: compressed BMP is not supported");
  if (bpp != 24 && bpp != 32 && bpp != 8 && bpp != 4 && bpp != 1)
    throw UnsupportedError("ImageDecoder: BMP with " + std::to_string(bpp) +
                           " bits per pixel is not supported");
  if (w <= 0 || hs == 0 || w > (1 << 16) || std::abs(static_cast<int64_t>(hs)) > (1 << 16))
    bad_image("BMP", "bad size");
  const bool bottom_up = hs > 0;
  const int64_t h = std::abs(static_cast<int64_t>(hs));
  const size_t stride = ((static_cast<size_t>(w) * bpp + 31) / 32) * 4;
  if (off > n || static_cast<size_t>(h) * stride > n - off)
    bad_image("BMP", "pixel data is truncated");
  std::vector<uint8_t> pal;  // BGRx entries
  if (bpp <= 8) {
    if (ncolors == 0) ncolors = 1u << bpp;
    const size_t pal_at = 14 + hsize;
    if (pal_at + ncolors * 4 > off) bad_image("BMP", "palette is truncated");
    pal.assign(d + pal_at, d + pal_at + ncolors * 4);
  }
  Rgb out;
  out.h = h;
  out.w = w;
  out.px.resize(static_cast<size_t>(h * w * 3));
  for (int64_t y = 0; y < h; ++y) {
    const uint8_t* row = d + off + static_cast<size_t>(bottom_up ? h - 1 - y : y) * stride;
    uint8_t* o = out.px.data() + static_cast<size_t>(y * w * 3);
    for (int64_t x = 0; x < w; ++x, o += 3) {
      if (bpp >= 24) {
        const uint8_t* p = row + x * (bpp / 8);
        o[0] = p[2];
        o[1] = p[1];
        o[2] = p[0];
      } else {
        const size_t bit = static_cast<size_t>(x) * bpp;
        const uint32_t idx = (row[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1u);
        if (idx >= ncolors) bad_image("BMP", "palette index out of range");
        o[0] = pal[idx * 4 + 2];
        o[1] = pal[idx * 4 + 1];
        o[2] = pal[idx * 4];
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------- PNM

Rgb decode_pnm(const uint8_t* d, size_t n) {
  const char kind = static_cast<char>(d[1]);
  const bool ascii = kind == '2' || kind == '3';
  const int channels = (kind == '3' || kind == '6') ? 3 : 1;
  size_t i = 2;
  auto skip_space = [&] {
    while (i < n) {
      if (d[i] == '#') {
        while (i < n && d[i] != '\n') ++i;
      } else if (std::isspace(d[i]))
        ++i;
      else
        break;
    }
  };
  auto number = [&]() -> int64_t {
    skip_space();
    if (i >= n || !std::isdigit(d[i])) bad_image("PNM", "expected a number");
    int64_t v = 0;
    while (i < n && std::isdigit(d[i])) {
      v = v * 10 + (d[i++] - '0');
      if (v > (1 << 20)) bad_image("PNM", "number too large");
    }
    return v;
  };
  const int64_t w = number(), h = number(), maxval = number();
  if (w <= 0 || h <= 0 || w > (1 << 16) || h > (1 << 16) || maxval <= 0)
    bad_image("PNM", "bad header");
  if (maxval > 255) throw UnsupportedError("ImageDecoder: 16-bit PNM is not supported");
  if (!ascii) ++i;  // the single whitespace after maxval
  Rgb out;
  out.h = h;
  out.w = w;
  out.px.resize(static_cast<size_t>(h * w * 3));
  const size_t count = static_cast<size_t>(h * w * channels);
  if (!ascii && n - std::min(i, n) < count) bad_image("PNM", "pixel data is truncated");
  for (size_t k = 0; k < count; ++k) {
    int64_t v = ascii ? number() : d[i + k];
    if (v > maxval) bad_image("PNM", "sample above maxval");
    v = maxval == 255 ? v : (v * 255 + maxval / 2) / maxval;
    if (channels == 3)
      out.px[k] = static_cast<uint8_t>(v);
    else
      std::fill_n(out.px.begin() + static_cast<std::ptrdiff_t>(k * 3), 3, static_cast<uint8_t>(v));
  }
  return out;
}

// ---------------------------------------------------------------------------- TIFF

Rgb decode_tiff(const uint8_t* d, size_t n) {
  const bool little = d[0] == 'I';
  auto rd = [&](size_t at, int bytes) -> uint32_t {
    if (at + static_cast<size_t>(bytes) > n) bad_image("TIFF", "truncated");
    uint32_t v = 0;
    for (int k = 0; k < bytes; ++k)
      v |= static_cast<uint32_t>(d[at + (little ? k : bytes - 1 - k)]) << (8 * k);
    return v;
  };
  const uint32_t ifd = rd(4, 4);
  const uint32_t count = rd(ifd, 2);
  uint32_t w = 0, h = 0, comp = 1, photometric = 2, spp = 1, rows_per_strip = 0xFFFFFFFFu,
           planar = 1;
  std::vector<uint32_t> bits, offsets, sizes;
  auto values = [&](size_t entry) {
    const uint32_t type = rd(entry + 2, 2), cnt = rd(entry + 4, 4);
    const int sz = type == 3 ? 2 : type == 4 ? 4 : type == 1 ? 1 : 0;
    if (sz == 0) bad_image("TIFF", "unexpected field type " + std::to_string(type));
    if (cnt > (1u << 20)) bad_image("TIFF", "field too long");
    const size_t at = static_cast<size_t>(cnt) * sz <= 4 ? entry + 8 : rd(entry + 8, 4);
    std::vector<uint32_t> v(cnt);
    for (uint32_t k = 0; k < cnt; ++k) v[k] = rd(at + static_cast<size_t>(k) * sz, sz);
    return v;
  };
  for (uint32_t e = 0; e < count; ++e) {
    const size_t entry = ifd + 2 + static_cast<size_t>(e) * 12;
    const uint32_t tag = rd(entry, 2);
    auto one = [&] {
      auto v = values(entry);
      if (v.empty()) bad_image("TIFF", "empty field");
      return v[0];
    };
    switch (tag) {
      case 256:
        w = one();
        break;
      case 257:
        h = one();
        break;
      case 258:
        bits = values(entry);
        break;
      case 259:
        comp = one();
        break;
      case 262:
        photometric = one();
        break;
      case 273:
        offsets = values(entry);
        break;
      case 277:
        spp = one();
        break;
      case 278:
        rows_per_strip = one();
        break;
      case 279:
        sizes = values(entry);
        break;
      case 284:
        planar = one();
        break;
      default:
        break;
    }
  }
  if (comp != 1)
    throw UnsupportedError("ImageDecoder: compressed TIFF (compression " + std::to_string(comp) +
                           ") is not supported");
  for (uint32_t b : bits)
    if (b != 8)
      throw UnsupportedError("ImageDecoder: TIFF with " + std::to_string(b) +
                             " bits per sample is not supported");
  if (planar != 1 || !(photometric == 2 || photometric <= 1) || spp == 0 || spp > 4)
    throw UnsupportedError("ImageDecoder: TIFF layout (photometric " + std::to_string(photometric) +
                           ", " + std::to_string(spp) + " samples, planar " +
                           std::to_string(planar) + ") is not supported");
  if (w == 0 || h == 0 || w > (1u << 16) || h > (1u << 16) || offsets.empty() ||
      offsets.size() != sizes.size())
    bad_image("TIFF", "bad size or strips");
  // Strips concatenated in order hold the rows.
  std::vector<uint8_t> raw;
  for (size_t k = 0; k < offsets.size(); ++k) {
    if (offsets[k] > n || sizes[k] > n - offsets[k]) bad_image("TIFF", "strip outside the data");
    raw.insert(raw.end(), d + offsets[k], d + offsets[k] + sizes[k]);
  }
  (void)rows_per_strip;
  if (raw.size() < static_cast<size_t>(w) * h * spp) bad_image("TIFF", "pixel data is truncated");
  Rgb out;
  out.h = h;
  out.w = w;
  out.px.resize(static_cast<size_t>(h) * w * 3);
  for (size_t p = 0; p < static_cast<size_t>(w) * h; ++p) {
    const uint8_t* s = raw.data() + p * spp;
    for (int c = 0; c < 3; ++c) {
      uint8_t v = spp >= 3 ? s[c] : s[0];
      if (spp < 3 && photometric == 0) v = static_cast<uint8_t>(255 - v);  // WhiteIsZero
      out.px[p * 3 + static_cast<size_t>(c)] = v;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------- the kernel

Rgb decode(const uint8_t* d, size_t n) {
  auto starts = [&](const char* magic, size_t len) {
    return n >= len && std::memcmp(d, magic, len) == 0;
  };
  if (starts("\xFF\xD8\xFF", 3)) {
#ifdef MCC_HAVE_LIBJPEG
    return decode_jpeg(d, n);
#else
    throw UnsupportedError("ImageDecoder: JPEG needs libjpeg, which this build does not link");
#endif
  }
  if (starts("\x89PNG\r\n\x1a\n", 8)) {
#ifdef MCC_HAVE_LIBPNG
    return decode_png(d, n);
#else
    throw UnsupportedError("ImageDecoder: PNG needs libpng, which this build does not link");
#endif
  }
  if (starts("BM", 2)) return decode_bmp(d, n);
  if (n >= 3 && d[0] == 'P' && d[1] >= '2' && d[1] <= '6' && d[1] != '4') return decode_pnm(d, n);
  if (starts("II*\0", 4) || starts("MM\0*", 4)) return decode_tiff(d, n);
  if (starts("\0\0\0\x0cjP  ", 8) || starts("\xFF\x4F\xFF\x51", 4))
    throw UnsupportedError("ImageDecoder: JPEG 2000 is not supported by the cpu backend");
  if (starts("RIFF", 4) && n >= 12 && std::memcmp(d + 8, "WEBP", 4) == 0)
    throw UnsupportedError("ImageDecoder: WebP is not supported by the cpu backend");
  throw UnsupportedError("ImageDecoder: unrecognised image format");
}

enum class PixelFormat { Rgb, Bgr, Gray };

Kernel make_image_decoder(const ir::Node& n) {
  const std::string pf = n.attr_string("pixel_format", "RGB");
  PixelFormat fmt;
  if (pf == "RGB")
    fmt = PixelFormat::Rgb;
  else if (pf == "BGR")
    fmt = PixelFormat::Bgr;
  else if (pf == "Grayscale")
    fmt = PixelFormat::Gray;
  else
    throw ModelError(n.describe() +
                     ": ImageDecoder pixel_format must be RGB, BGR or Grayscale, got '" + pf + "'");
  return [fmt](KernelContext& ctx) {
    const ir::Node& node = ctx.node();
    const ir::Tensor& x = ctx.in(0);
    if (x.dtype() != ir::DType::U8 || x.rank() != 1)
      throw ModelError(node.describe() + ": ImageDecoder input must be a 1-D u8 tensor");
    Rgb img;
    try {
      img = decode(reinterpret_cast<const uint8_t*>(x.raw()), static_cast<size_t>(x.numel()));
    } catch (Error& e) {
      e.add_context(node.describe());
      throw;
    }
    const int64_t c = fmt == PixelFormat::Gray ? 1 : 3;
    ir::Tensor& y = ctx.alloc_output(0, ir::DType::U8, {img.h, img.w, c});
    uint8_t* o = y.mutable_data<uint8_t>().data();
    const size_t np = static_cast<size_t>(img.h * img.w);
    for (size_t p = 0; p < np; ++p) {
      const uint8_t* s = img.px.data() + p * 3;
      if (fmt == PixelFormat::Rgb) {
        o[p * 3] = s[0];
        o[p * 3 + 1] = s[1];
        o[p * 3 + 2] = s[2];
      } else if (fmt == PixelFormat::Bgr) {
        o[p * 3] = s[2];
        o[p * 3 + 1] = s[1];
        o[p * 3 + 2] = s[0];
      } else
        o[p] = static_cast<uint8_t>((s[0] * 19595u + s[1] * 38470u + s[2] * 7471u + 0x8000u) >> 16);
    }
  };
}

}  // namespace

void register_image_decoder(KernelRegistry& r) { r.add("ImageDecoder", 20, 0, make_image_decoder); }

}  // namespace mcc::backends::cpu
