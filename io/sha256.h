// SHA-256 digests (OpenSSL libcrypto) for the sidecar state: input and output model hashes.
#pragma once
#include <string>
#include <string_view>

namespace mcc::io {
/// Lower-case hex SHA-256 of a byte string.
std::string sha256_hex(std::string_view data);
/// Lower-case hex SHA-256 of a file, read in chunks. Throws ModelError when it cannot be read.
std::string sha256_file_hex(const std::string& path);
}  // namespace mcc::io
