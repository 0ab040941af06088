// .npy reader/writer: parses the header dict (descr, fortran_order, shape) and maps descr codes
// to DTypes; data is copied into an owned buffer.
#include "ir/npy.h"
#include "ir/import_limits.h"
#include "ir/text_escape.h"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace mcc::ir {
namespace {

struct NpyCode { const char* descr; DType dt; };
constexpr NpyCode kCodes[] = {
    {"f4", DType::F32}, {"f8", DType::F64}, {"f2", DType::F16}, {"i1", DType::I8},
    {"u1", DType::U8},  {"i2", DType::I16}, {"u2", DType::U16}, {"i4", DType::I32},
    {"u4", DType::U32}, {"i8", DType::I64}, {"u8", DType::U64}, {"b1", DType::Bool},
};

std::string header_value(const std::string& h, const std::string& key, const std::string& path) {
  const auto k = h.find("'" + key + "'");
  if (k == std::string::npos) throw ModelError(path + ": .npy header has no '" + key + "'");
  auto p = h.find(':', k);
  if (p == std::string::npos) throw ModelError(path + ": malformed .npy header");
  ++p;
  while (p < h.size() && h[p] == ' ') ++p;
  if (p >= h.size()) throw ModelError(path + ": malformed .npy header");
  char close = h[p] == '\'' ? '\'' : h[p] == '(' ? ')' : ',';
  const size_t start = (close == ',') ? p : p + 1;
  const auto e = h.find(close, start);
  if (e == std::string::npos) throw ModelError(path + ": malformed .npy header");
  return h.substr(start, e - start);
}

}  // namespace

Tensor load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ModelError(path + ": cannot open .npy file");
  char magic[8];
  if (!f.read(magic, 8) || std::string(magic, 6) != "\x93NUMPY")
    throw ModelError(path + ": not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(magic[6]);
  uint32_t hlen = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!f.read(reinterpret_cast<char*>(b), 2)) throw ModelError(path + ": truncated .npy header");
    hlen = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!f.read(reinterpret_cast<char*>(b), 4)) throw ModelError(path + ": truncated .npy header");
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    throw ModelError(path + ": unsupported .npy version " + std::to_string(major));
  }
  if (hlen > (1u << 20)) throw ModelError(path + ": .npy header too large");
  std::string h(hlen, '\0');
  if (!f.read(h.data(), hlen)) throw ModelError(path + ": truncated .npy header");

  std::string descr = header_value(h, "descr", path);
  if (header_value(h, "fortran_order", path).find("True") != std::string::npos)
    throw UnsupportedError(path + ": Fortran-order .npy arrays are not supported");
  if (descr.size() < 2) throw ModelError(path + ": bad .npy descr '" + printable_line(descr, 80) + "'");
  const char endian = descr[0];
  const std::string code = (endian == '<' || endian == '|' || endian == '=') ? descr.substr(1) : descr;
  if (endian == '>' && code != "i1" && code != "u1" && code != "b1")
    throw UnsupportedError(path + ": big-endian .npy data is not supported");
  DType dt = DType::Undefined;
  for (const auto& c : kCodes)
    if (code == c.descr) dt = c.dt;
  if (dt == DType::Undefined) throw UnsupportedError(path + ": .npy dtype '" + printable_line(descr, 80) + "' is not supported");

  std::vector<int64_t> dims;
  const std::string shape = header_value(h, "shape", path);
  size_t p = 0;
  while (p < shape.size()) {
    while (p < shape.size() && (shape[p] == ' ' || shape[p] == ',')) ++p;
    if (p >= shape.size()) break;
    size_t e = p;
    while (e < shape.size() && shape[e] >= '0' && shape[e] <= '9') ++e;
    int64_t d = 0;
    const auto [end, ec] = std::from_chars(shape.data() + p, shape.data() + e, d);
    if (e == p || ec != std::errc() || end != shape.data() + e)
      throw ModelError(path + ": bad .npy shape '(" + printable_line(shape, 80) + ")'");
    dims.push_back(d);
    p = e;
  }
  // The claimed size must be what the file holds, checked before allocating.
  uint64_t n = 0;
  try {
    n = limits::tensor_bytes(dt, dims);
  } catch (Error& e) {
    e.add_context(path);
    throw;
  }
  const auto data_at = f.tellg();
  f.seekg(0, std::ios::end);
  const auto file_end = f.tellg();
  f.seekg(data_at);
  if (data_at < 0 || file_end < data_at || static_cast<uint64_t>(file_end - data_at) < n)
    throw ModelError(path + ": truncated .npy data (the shape claims " + std::to_string(n) +
                     " bytes, the file holds " + std::to_string(file_end - data_at) + ")");
  Tensor t = Tensor::allocate(dt, dims);
  if (n && !f.read(reinterpret_cast<char*>(t.mutable_raw()), static_cast<std::streamsize>(n)))
    throw ModelError(path + ": truncated .npy data (expected " + std::to_string(n) + " bytes)");
  return t;
}

void save_npy(const Tensor& t, const std::string& path) {
  const char* descr = nullptr;
  for (const auto& c : kCodes)
    if (c.dt == t.dtype()) descr = c.descr;
  if (!descr) throw UnsupportedError("cannot write dtype " + dtype_name(t.dtype()) + " to .npy (" + path + ")");
  std::string shape;
  for (size_t i = 0; i < t.dims().size(); ++i) shape += std::to_string(t.dims()[i]) + (t.dims().size() == 1 || i + 1 < t.dims().size() ? "," : "");
  std::string h = std::string("{'descr': '") + (std::string(descr) == "i1" || std::string(descr) == "u1" || std::string(descr) == "b1" ? "|" : "<") +
                  descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  const size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h.push_back('\n');
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw ModelError("cannot write '" + path + "'");
    const unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                   static_cast<unsigned char>(h.size() & 0xff), static_cast<unsigned char>(h.size() >> 8)};
    f.write(reinterpret_cast<const char*>(pre), 10);
    f.write(h.data(), static_cast<std::streamsize>(h.size()));
    f.write(reinterpret_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
    if (!f) { std::remove(tmp.c_str()); throw ModelError("cannot write '" + path + "'"); }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) { std::remove(tmp.c_str()); throw ModelError("cannot write '" + path + "': " + ec.message()); }
}

}  // namespace mcc::ir
