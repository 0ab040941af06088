// Tensor storage: owned buffers, memory-mapped external data, and checked accessors.
#include "ir/tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <new>

namespace mcc::ir {
namespace {

/// madvise(MADV_DONTNEED) over the whole pages inside [base+offset, base+offset+len).
void discard_whole_pages(const std::byte* base, size_t offset, size_t len) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(base) + offset + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(base) + offset + len) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

class OwnedBuffer final : public Buffer {
 public:
  explicit OwnedBuffer(std::string s) : bytes_(std::move(s)) {}
  const std::byte* data() const override { return reinterpret_cast<const std::byte*>(bytes_.data()); }
  size_t size() const override { return bytes_.size(); }
  std::byte* mutable_data() override { return reinterpret_cast<std::byte*>(bytes_.data()); }
  void discard_pages(size_t offset, size_t len) override { discard_whole_pages(data(), offset, len); }

 private:
  std::string bytes_;
};

// Zero-filled bytes at a 64-byte boundary: SIMD kernels then see the same alignment on every run,
// so their results do not depend on where the allocator happened to place a buffer.
class AlignedBuffer final : public Buffer {
 public:
  explicit AlignedBuffer(size_t n, bool own_pages = false) : size_(n) {
    const size_t cap = (std::max<size_t>(n, 1) + 63) / 64 * 64;
    if (own_pages || cap >= kMappedMinBytes) {
      // Large buffers come straight from the OS: zero pages that use memory only once written.
      void* p = ::mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      ptr_ = static_cast<std::byte*>(p);
      mapped_ = cap;
      return;
    }
    ptr_ = static_cast<std::byte*>(std::aligned_alloc(64, cap));
    if (!ptr_) throw std::bad_alloc();
    std::memset(ptr_, 0, cap);
  }
  ~AlignedBuffer() override {
    if (mapped_) ::munmap(ptr_, mapped_);
    else std::free(ptr_);
  }
  void discard_pages(size_t offset, size_t len) override { discard_whole_pages(ptr_, offset, len); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  const std::byte* data() const override { return ptr_; }
  size_t size() const override { return size_; }
  std::byte* mutable_data() override { return ptr_; }

 private:
  // Above glibc's largest mmap threshold (32 MiB), so smaller buffers keep malloc's reuse.
  static constexpr size_t kMappedMinBytes = size_t{64} << 20;
  std::byte* ptr_ = nullptr;
  size_t size_;
  size_t mapped_ = 0;  // mmap length when the bytes come from mmap, else 0
};

class MappedFile {
 public:
  MappedFile(void* p, size_t n) : ptr_(p), size_(n) {}
  ~MappedFile() { if (ptr_ && size_) munmap(ptr_, size_); }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const std::byte* data() const { return static_cast<const std::byte*>(ptr_); }
  size_t size() const { return size_; }

 private:
  void* ptr_;
  size_t size_;
};

class MappedSlice final : public Buffer {
 public:
  MappedSlice(std::shared_ptr<MappedFile> f, size_t off, size_t len) : file_(std::move(f)), off_(off), len_(len) {}
  const std::byte* data() const override { return file_->data() + off_; }
  size_t size() const override { return len_; }
  std::byte* mutable_data() override {
    throw InternalError("attempt to write into a read-only mapped tensor buffer");
  }
  bool writable() const override { return false; }
  void discard_pages(size_t offset, size_t len) override {
    discard_whole_pages(data(), offset, std::min(len, len_ - std::min(offset, len_)));
  }

 private:
  std::shared_ptr<MappedFile> file_;
  size_t off_, len_;
};

}  // namespace

std::shared_ptr<Buffer> make_owned_buffer(std::string bytes) {
  return std::make_shared<OwnedBuffer>(std::move(bytes));
}
std::shared_ptr<Buffer> make_owned_buffer(size_t size) {
  return std::make_shared<AlignedBuffer>(size);
}
std::shared_ptr<Buffer> make_page_buffer(size_t size) {
  return std::make_shared<AlignedBuffer>(size, true);
}

std::shared_ptr<Buffer> map_file_range(const std::string& path, uint64_t offset, int64_t length) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ModelError("external data file '" + path + "' cannot be opened (missing?)");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ModelError("external data file '" + path + "' is not a regular file");
  }
  const auto fsize = static_cast<uint64_t>(st.st_size);
  const uint64_t len = length < 0 ? (offset <= fsize ? fsize - offset : 0) : static_cast<uint64_t>(length);
  if (offset > fsize || len > fsize - offset) {
    ::close(fd);
    throw ModelError("external data file '" + path + "' is too short: need bytes [" +
                     std::to_string(offset) + ", " + std::to_string(offset + len) + ") of " +
                     std::to_string(fsize));
  }
  if (len == 0) {
    ::close(fd);
    return make_owned_buffer(std::string());
  }
  // Map the whole range from a page-aligned start.
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  const size_t maplen = static_cast<size_t>(offset + len - start);
  void* p = ::mmap(nullptr, maplen, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(start));
  ::close(fd);
  if (p == MAP_FAILED) throw ModelError("external data file '" + path + "' cannot be mapped");
  auto file = std::make_shared<MappedFile>(p, maplen);
  return std::make_shared<MappedSlice>(std::move(file), static_cast<size_t>(offset - start), static_cast<size_t>(len));
}

int64_t checked_numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) throw ModelError("negative tensor dimension " + std::to_string(d));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw ModelError("tensor element count overflows int64");
    n *= d;
  }
  return n;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

size_t Tensor::nbytes() const {
  const int bits = info(dtype_).bits;
  return (static_cast<size_t>(numel()) * static_cast<size_t>(bits) + 7) / 8;
}

Tensor Tensor::allocate(DType dt, std::vector<int64_t> dims) {
  Tensor t;
  t.dtype_ = dt;
  t.dims_ = std::move(dims);
  checked_numel(t.dims_);
  if (dt == DType::String) {
    t.strings_ = std::make_shared<std::vector<std::string>>(static_cast<size_t>(t.numel()));
  } else {
    t.buf_ = make_owned_buffer(t.nbytes());
  }
  return t;
}

Tensor Tensor::from_buffer(DType dt, std::vector<int64_t> dims, std::shared_ptr<Buffer> buf) {
  Tensor t;
  t.dtype_ = dt;
  t.dims_ = std::move(dims);
  checked_numel(t.dims_);
  if (info(dt).bits > 0 && buf && buf->size() != t.nbytes())
    throw ModelError("tensor data holds " + std::to_string(buf->size()) + " bytes, expected " +
                     std::to_string(t.nbytes()) + " for " + dtype_name(dt) + " x " +
                     std::to_string(t.numel()));
  t.buf_ = buf ? std::move(buf) : make_owned_buffer(std::string());
  return t;
}

Tensor Tensor::from_strings(std::vector<int64_t> dims, std::vector<std::string> values) {
  Tensor t;
  t.dtype_ = DType::String;
  t.dims_ = std::move(dims);
  if (static_cast<size_t>(checked_numel(t.dims_)) != values.size())
    throw ModelError("string tensor holds " + std::to_string(values.size()) + " values, expected " +
                     std::to_string(t.numel()));
  t.strings_ = std::make_shared<std::vector<std::string>>(std::move(values));
  return t;
}

std::span<const std::byte> Tensor::bytes() const {
  if (!buf_) return {};
  return {raw(), buf_->size()};
}
std::string Device::name() const {
  return is_host() ? std::string("host") : "cuda:" + std::to_string(ordinal);
}

namespace {
[[noreturn]] void device_bytes_read(const Buffer& b) {
  throw InternalError("tensor bytes live on " + b.device().name() +
                      "; a host kernel was handed a device tensor without a transfer");
}
}  // namespace

const std::byte* Tensor::raw() const {
  if (!buf_) return nullptr;
  if (!buf_->device().is_host()) [[unlikely]] device_bytes_read(*buf_);
  return buf_->data();
}
std::byte* Tensor::mutable_raw() {
  if (!buf_) return nullptr;
  if (!buf_->device().is_host()) [[unlikely]] device_bytes_read(*buf_);
  return buf_->mutable_data();
}

const std::vector<std::string>& Tensor::strings() const {
  static const std::vector<std::string> kEmpty;
  return strings_ ? *strings_ : kEmpty;
}
std::vector<std::string>& Tensor::mutable_strings() {
  if (!strings_) strings_ = std::make_shared<std::vector<std::string>>();
  return *strings_;
}

Tensor Tensor::reshaped(std::vector<int64_t> dims) const {
  MCC_CHECK(checked_numel(dims) == numel(), "reshaped: element count differs");
  Tensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = *this;
  if (buf_) {
    t.buf_ = buf_->size() >= kPageBufferMinBytes ? make_page_buffer(buf_->size()) : make_owned_buffer(buf_->size());
    if (buf_->size()) std::memcpy(t.buf_->mutable_data(), raw(), buf_->size());
  }
  if (strings_) t.strings_ = std::make_shared<std::vector<std::string>>(*strings_);
  return t;
}

void Tensor::check_type(DType want) const {
  if (want != dtype_)
    throw InternalError("tensor accessed as " + dtype_name(want) + " but holds " + dtype_name(dtype_));
}

}  // namespace mcc::ir
