// The anonymous scratch file (see ir/spill_file.h).
#include "ir/spill_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>

#include "ir/errors.h"

namespace mcc::ir {

std::unique_ptr<SpillFile> SpillFile::create() {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) return nullptr;
  std::string pattern = (dir / "mcc-spill-XXXXXX").string();
  const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) return nullptr;
  ::unlink(pattern.c_str());
  return std::unique_ptr<SpillFile>(new SpillFile(fd));
}

SpillFile::~SpillFile() { ::close(fd_); }

bool SpillFile::append(const void* p, size_t n, uint64_t& offset) {
  const auto* b = static_cast<const char*>(p);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::pwrite(fd_, b + done, n - done, static_cast<off_t>(size_ + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  offset = size_;
  size_ += n;
  return true;
}

void SpillFile::read(uint64_t offset, void* p, size_t n) const {
  auto* b = static_cast<char*>(p);
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_, b + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw InternalError("bytes written to a temporary spill file could not be read back");
    done += static_cast<size_t>(r);
  }
}

}  // namespace mcc::ir
