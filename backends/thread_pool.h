// One process-wide thread pool (Eigen's ThreadPool) with a deterministic static parallel_for.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

namespace Eigen { class ThreadPoolDevice; }

namespace mcc::backends {

class ThreadPool {
 public:
  /// The pool for the process. The first call fixes the thread count (0 = all cores).
  static ThreadPool& instance(int threads = 0);
  /// Re-creates the pool with another thread count (tests, --threads).
  static void configure(int threads);
  /// In a child process after fork(): abandons the parent's pool (its threads do not exist
  /// here) and creates a fresh one.
  static void reset_after_fork(int threads);
  int size() const { return threads_; }
  /// Splits [0, n) into at most size() contiguous chunks (fixed for a given n and size) and
  /// runs them in parallel; returns when all are done. Runs inline when work is small.
  void parallel_for(int64_t n, int64_t cost_per_item, const std::function<void(int64_t, int64_t)>& f);
  /// Eigen device for Tensor contractions on this pool.
  Eigen::ThreadPoolDevice& eigen_device();
  ~ThreadPool();

 private:
  explicit ThreadPool(int threads);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int threads_;
};

}  // namespace mcc::backends
