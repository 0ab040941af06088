// Caching allocators for device memory and for page-locked host memory (the outputs that come
// back from the device): requests are rounded up to a size class (512-byte steps up to 4 KiB,
// then four classes per power of two), freed blocks wait in a free list per class and are
// handed out again. Thread-safe (one mutex each). Memory is returned to the runtime only by
// release_cached_device_memory() or when an allocation fails (cache flushed, then one retry).
#include "backends/cuda/runtime/device_allocator.h"

#include <map>
#include <mutex>
#include <vector>

#include "backends/cuda/runtime/device_api.h"
#include "ir/errors.h"

namespace mcc::cuda {
namespace {

constexpr size_t kMinBlock = 512;
// Downloads below this size are plain host memory (a page-locked block costs more to set up than
// such a copy gains); above kMaxPinnedInUse of page-locked memory held by live outputs (an eval
// keeping every sample's outputs), further downloads are plain memory too.
constexpr size_t kMinPinnedDownload = size_t{256} << 10;
constexpr size_t kMaxPinnedInUse = size_t{2} << 30;

/// The size class of a request: a multiple of 512 up to 4 KiB, then 1, 1.25, 1.5 or 1.75 times
/// a power of two (rounded up to 512), so a cached block wastes at most a quarter of itself.
size_t size_class(size_t bytes) {
  if (bytes <= 8 * kMinBlock) return bytes == 0 ? kMinBlock : (bytes + kMinBlock - 1) / kMinBlock * kMinBlock;
  size_t pow2 = 1;
  while (pow2 * 2 <= bytes) pow2 *= 2;
  const size_t step = pow2 / 4;
  const size_t rounded = (bytes + step - 1) / step * step;
  return (rounded + kMinBlock - 1) / kMinBlock * kMinBlock;
}

class Cache {
 public:
  Cache(void* (*alloc)(size_t), void (*release)(void*)) : alloc_(alloc), release_(release) {}
  void* take(size_t cls) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(cls);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= cls;
        used_ += cls;
        return p;
      }
    }
    void* p = nullptr;
    try {
      p = alloc_(cls);
    } catch (const BackendError&) {
      release_all();
      p = alloc_(cls);
    }
    std::lock_guard<std::mutex> lock(mu_);
    used_ += cls;
    return p;
  }
  void give_back(void* p, size_t cls) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[cls].push_back(p);
    used_ -= cls;
    cached_ += cls;
  }
  void release_all() {
    std::map<size_t, std::vector<void*>> blocks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocks.swap(free_);
      cached_ = 0;
    }
    for (auto& [cls, list] : blocks)
      for (void* p : list) release_(p);
  }
  size_t used() {
    std::lock_guard<std::mutex> lock(mu_);
    return used_;
  }
  size_t cached() {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_;
  }

 private:
  void* (*alloc_)(size_t);
  void (*release_)(void*);
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t used_ = 0, cached_ = 0;
};

/// Leaked on purpose: buffers may be released during static destruction, after the runtime is
/// gone; the process exit reclaims device memory anyway.
Cache& cache() {
  static Cache* c = new Cache(device_malloc, device_free);
  return *c;
}
Cache& pinned_cache() {
  static Cache* c = new Cache(pinned_malloc, pinned_free);
  return *c;
}

class CachedBuffer final : public ir::Buffer {
 public:
  CachedBuffer(Cache& from, ir::Device where, void* p, size_t bytes, size_t cls)
      : from_(from), p_(static_cast<std::byte*>(p)), bytes_(bytes), cls_(cls) {
    device_ = where;
  }
  ~CachedBuffer() override { from_.give_back(p_, cls_); }
  const std::byte* data() const override { return p_; }
  size_t size() const override { return bytes_; }
  std::byte* mutable_data() override { return p_; }
  bool writable() const override { return true; }

 private:
  Cache& from_;
  std::byte* p_;
  size_t bytes_, cls_;
};

}  // namespace

std::shared_ptr<ir::Buffer> allocate_device_buffer(size_t bytes) {
  const size_t cls = size_class(bytes);
  return std::make_shared<CachedBuffer>(cache(), ir::Device{ir::DeviceType::Cuda, 0}, cache().take(cls), bytes, cls);
}

std::shared_ptr<ir::Buffer> allocate_download_buffer(size_t bytes) {
  if (bytes < kMinPinnedDownload || pinned_cache().used() + bytes > kMaxPinnedInUse)
    return ir::make_owned_buffer(bytes);
  const size_t cls = size_class(bytes);
  return std::make_shared<CachedBuffer>(pinned_cache(), ir::Device{}, pinned_cache().take(cls), bytes, cls);
}

size_t used_pinned_bytes() { return pinned_cache().used(); }

size_t cached_device_bytes() { return cache().cached(); }

size_t used_device_bytes() { return cache().used(); }

void release_cached_device_memory() {
  cache().release_all();
  pinned_cache().release_all();
}

}  // namespace mcc::cuda
