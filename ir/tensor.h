// Tensor: an immutable, shareable n-d array of raw little-endian bytes (or strings), plus what
// ONNX's TensorProto carries that mcc must write back (name, doc string, external-data reference).
// Passes that do not change a weight share its buffer; they never copy it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/dtype.h"

namespace mcc::ir {

/// Where a buffer's bytes live. Host bytes are read through Buffer::data(); the bytes of a device
/// buffer are only addressable by the backend that allocated it (Tensor::raw() refuses them, so a
/// host kernel handed a device tensor fails loudly instead of reading device addresses).
enum class DeviceType : uint8_t { Host = 0, Cuda = 1 };
struct Device {
  DeviceType type = DeviceType::Host;
  int ordinal = 0;
  bool is_host() const { return type == DeviceType::Host; }
  bool operator==(const Device&) const = default;
  /// "host", "cuda:0".
  std::string name() const;
};

/// Owned or mapped bytes. Implementations: an owned std::string (protobuf's raw_data is moved in,
/// not copied), a read-only file mapping, or a slice of another buffer.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual const std::byte* data() const = 0;
  virtual size_t size() const = 0;
  /// Writable view; only valid for owned buffers (throws InternalError on mapped ones).
  virtual std::byte* mutable_data() = 0;
  /// False for read-only (mapped) buffers.
  virtual bool writable() const { return true; }
  /// Gives the whole memory pages inside [offset, offset+len) back to the OS. The caller promises
  /// that nothing reads those bytes again: file-mapped pages would be re-read from the file, owned
  /// pages read as zeros. Only for a holder that is about to drop the buffer (see
  /// ir/tensor_streaming.h); a no-op where the buffer cannot do it.
  virtual void discard_pages(size_t offset, size_t len) {}
  /// Where the bytes live (host unless a backend allocated device memory).
  Device device() const { return device_; }

 protected:
  Device device_{};
};

/// A buffer that owns its bytes in a std::string (so protobuf strings can be moved in).
std::shared_ptr<Buffer> make_owned_buffer(std::string bytes);
std::shared_ptr<Buffer> make_owned_buffer(size_t size);  // zero-filled
/// Zero-filled bytes in an anonymous mapping of their own (whole pages): released to the system the
/// moment the buffer goes, whatever malloc's heap holds. Weights of kPageBufferMinBytes or more
/// take them: read from a file, or cloned by a transform (scaled, clipped) before being replaced.
std::shared_ptr<Buffer> make_page_buffer(size_t size);
inline constexpr size_t kPageBufferMinBytes = size_t{256} << 10;
/// A read-only view of [offset, offset+length) of a memory-mapped file. Throws ModelError when
/// the file is missing or too short.
std::shared_ptr<Buffer> map_file_range(const std::string& path, uint64_t offset, int64_t length);

/// Where a tensor's bytes lived on disk (TensorProto.external_data), kept for lossless save.
struct ExternalRef {
  std::string location;
  int64_t offset = -1;  // -1: key absent
  int64_t length = -1;  // -1: key absent
  std::string checksum;
  std::vector<std::pair<std::string, std::string>> extra;  // other keys, in file order
};

class Tensor {
 public:
  Tensor() = default;  // undefined tensor (dtype Undefined)

  /// A fresh, zero-filled, writable tensor (kernels fill it through mutable_data()).
  static Tensor allocate(DType dt, std::vector<int64_t> dims);
  /// Wraps bytes; their size must match dims x dtype (throws ModelError otherwise).
  static Tensor from_buffer(DType dt, std::vector<int64_t> dims, std::shared_ptr<Buffer> buf);
  static Tensor from_strings(std::vector<int64_t> dims, std::vector<std::string> values);
  template <class T>
  static Tensor from_vector(std::vector<int64_t> dims, const std::vector<T>& values) {
    Tensor t = allocate(dtype_of<T>(), std::move(dims));
    MCC_CHECK(static_cast<size_t>(t.numel()) == values.size(), "from_vector: size mismatch");
    if (!values.empty()) std::memcpy(t.buf_->mutable_data(), values.data(), values.size() * sizeof(T));
    return t;
  }
  template <class T>
  static Tensor scalar(T v) { return from_vector<T>({}, std::vector<T>{v}); }

  bool defined() const { return dtype_ != DType::Undefined || buf_ != nullptr; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t numel() const;
  /// Size of the data in bytes (sub-byte types packed, rounded up).
  size_t nbytes() const;

  std::span<const std::byte> bytes() const;
  template <class T>
  std::span<const T> data() const {
    check_type(dtype_of<T>());
    return {reinterpret_cast<const T*>(raw()), static_cast<size_t>(numel())};
  }
  /// Writable view. Only for tensors the caller just allocated (nothing else shares the buffer).
  template <class T>
  std::span<T> mutable_data() {
    check_type(dtype_of<T>());
    return {reinterpret_cast<T*>(mutable_raw()), static_cast<size_t>(numel())};
  }
  /// Host bytes; throws InternalError when the tensor lives on a device.
  const std::byte* raw() const;
  std::byte* mutable_raw();
  /// Where the bytes live (host for string and undefined tensors).
  Device device() const { return buf_ ? buf_->device() : Device{}; }
  /// The bytes' address on whatever device holds them (device kernels and transfers only).
  const void* device_data() const { return buf_ ? buf_->data() : nullptr; }
  void* mutable_device_data() { return buf_ ? buf_->mutable_data() : nullptr; }
  const std::vector<std::string>& strings() const;
  std::vector<std::string>& mutable_strings();
  const std::shared_ptr<Buffer>& buffer() const { return buf_; }

  /// Same bytes, other dims (numel must match).
  Tensor reshaped(std::vector<int64_t> dims) const;
  /// A deep copy with its own writable buffer.
  Tensor clone() const;

  /// Carried-through TensorProto fields (not part of the value).
  std::string name, doc_string;
  std::optional<ExternalRef> external;
  std::string proto_passthrough;  // serialized TensorProto fields mcc does not model (segment, unknown)

 private:
  void check_type(DType want) const;
  DType dtype_ = DType::Undefined;
  std::vector<int64_t> dims_;
  std::shared_ptr<Buffer> buf_;
  std::shared_ptr<std::vector<std::string>> strings_;
};

/// Product of dims (1 for a scalar). Throws ModelError on negative dims or overflow.
int64_t checked_numel(const std::vector<int64_t>& dims);

}  // namespace mcc::ir
