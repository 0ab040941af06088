// Parking a JSON document in an unlinked temporary file (see parked_json.h).
#include "transforms/pipeline/parked_json.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "ir/errors.h"

namespace mcc::transforms {
namespace {

/// An open, already unlinked temporary file, or -1.
int unlinked_temporary() {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) return -1;
  std::string pattern = (dir / "mcc-record-XXXXXX").string();
  const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) return -1;
  ::unlink(pattern.c_str());
  return fd;
}

bool write_all(int fd, const uint8_t* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::pwrite(fd, p + done, n - done, static_cast<off_t>(done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

std::shared_ptr<const ParkedJson> ParkedJson::park(nlohmann::ordered_json& doc) {
  const int fd = unlinked_temporary();
  if (fd < 0) return nullptr;
  std::vector<uint8_t> cbor;
  nlohmann::ordered_json::to_cbor(doc, cbor);
  if (!write_all(fd, cbor.data(), cbor.size())) {
    ::close(fd);
    return nullptr;
  }
  const size_t n = cbor.size();
  doc = nlohmann::ordered_json();
  return std::shared_ptr<const ParkedJson>(new ParkedJson(fd, n));
}

ParkedJson::~ParkedJson() { ::close(fd_); }

nlohmann::ordered_json ParkedJson::load() const {
  std::vector<uint8_t> cbor(bytes_);
  size_t done = 0;
  while (done < bytes_) {
    const ssize_t r = ::pread(fd_, cbor.data() + done, bytes_ - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw InternalError("a parked stage record could not be read back from its temporary file");
    done += static_cast<size_t>(r);
  }
  return nlohmann::ordered_json::from_cbor(cbor);
}

size_t json_payload_bytes(const nlohmann::ordered_json& doc) {
  if (doc.is_string()) return doc.get_ref<const std::string&>().size();
  if (!doc.is_structured()) return 8;
  size_t n = 8;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (doc.is_object()) n += it.key().size();
    n += json_payload_bytes(*it);
  }
  return n;
}

}  // namespace mcc::transforms
