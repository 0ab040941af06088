// Process-wide thread pool over Eigen's ThreadPool.
#define EIGEN_USE_THREADS
#include "backends/thread_pool.h"

#include <unsupported/Eigen/CXX11/Tensor>
#include <unsupported/Eigen/CXX11/ThreadPool>

#include <algorithm>
#include <mutex>
#include <thread>

namespace mcc::backends {

struct ThreadPool::Impl {
  explicit Impl(int n) : pool(n), device(&pool, n) {}
  Eigen::ThreadPool pool;
  Eigen::ThreadPoolDevice device;
};

namespace {
std::unique_ptr<ThreadPool>& slot() {
  static std::unique_ptr<ThreadPool> p;
  return p;
}
std::mutex& slot_mutex() {
  static std::mutex m;
  return m;
}
thread_local bool t_in_task = false;
int resolve(int threads) {
  if (threads > 0) return threads;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}
}  // namespace

ThreadPool::ThreadPool(int threads) : impl_(std::make_unique<Impl>(threads)), threads_(threads) {}
ThreadPool::~ThreadPool() = default;

ThreadPool& ThreadPool::instance(int threads) {
  std::lock_guard<std::mutex> lock(slot_mutex());
  auto& p = slot();
  if (!p) p.reset(new ThreadPool(resolve(threads)));
  return *p;
}

void ThreadPool::configure(int threads) {
  std::lock_guard<std::mutex> lock(slot_mutex());
  auto& p = slot();
  const int n = resolve(threads);
  if (p && p->threads_ == n) return;
  p.reset(new ThreadPool(n));
}

void ThreadPool::reset_after_fork(int threads) {
  auto& p = slot();
  (void)p.release();  // deliberately leaked: destroying it would join threads that do not exist
  p.reset(new ThreadPool(resolve(threads)));
}

void ThreadPool::parallel_for(int64_t n, int64_t cost_per_item,
                              const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  constexpr int64_t kMinWorkPerChunk = 32 * 1024;  // rough ops below which threading costs more
  int64_t chunks = std::min<int64_t>(threads_, n);
  if (cost_per_item > 0) chunks = std::min<int64_t>(chunks, std::max<int64_t>(1, n * cost_per_item / kMinWorkPerChunk));
  // Nested calls (from inside a pool task) run inline: blocking pool threads could deadlock.
  if (chunks <= 1 || t_in_task) { f(0, n); return; }
  Eigen::Barrier barrier(static_cast<unsigned>(chunks - 1));
  std::mutex err_mutex;
  std::exception_ptr first_error;
  const int64_t step = (n + chunks - 1) / chunks;
  for (int64_t c = 1; c < chunks; ++c) {
    const int64_t b = c * step, e = std::min(n, b + step);
    impl_->pool.Schedule([&, b, e] {
      t_in_task = true;
      try {
        if (b < e) f(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_mutex);
        if (!first_error) first_error = std::current_exception();
      }
      t_in_task = false;
      barrier.Notify();
    });
  }
  try {
    t_in_task = true;
    f(0, std::min(n, step));
    t_in_task = false;
  } catch (...) {
    t_in_task = false;
    std::lock_guard<std::mutex> lock(err_mutex);
    if (!first_error) first_error = std::current_exception();
  }
  barrier.Wait();
  if (first_error) std::rethrow_exception(first_error);
}

Eigen::ThreadPoolDevice& ThreadPool::eigen_device() { return impl_->device; }

}  // namespace mcc::backends
