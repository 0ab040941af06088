// SHA-256 through OpenSSL's EVP interface (one-shot for buffers, streamed for files).
#include "io/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

#include "ir/errors.h"

namespace mcc::io {
namespace {
std::string to_hex(const unsigned char* md, unsigned int n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (unsigned int i = 0; i < n; ++i) {
    out += kDigits[md[i] >> 4];
    out += kDigits[md[i] & 15];
  }
  return out;
}
}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr) != 1)
    throw InternalError("sha256: OpenSSL EVP_Digest failed");
  return to_hex(md, n);
}

std::string sha256_file_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError(path + ": cannot be read for hashing; check that it exists and is readable");
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw InternalError("sha256: OpenSSL digest context could not be created");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = in.gcount();
    if (got > 0 && EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(got)) != 1)
      throw InternalError("sha256: OpenSSL EVP_DigestUpdate failed");
  }
  if (in.bad()) throw ModelError(path + ": read error while hashing; check the disk and retry");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &n) != 1) throw InternalError("sha256: OpenSSL EVP_DigestFinal_ex failed");
  return to_hex(md, n);
}
}  // namespace mcc::io
