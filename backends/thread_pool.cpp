// Process-wide thread pool: size() - 1 worker threads plus the calling thread. A parallel
// section publishes one ticket (generation, chunk count, next chunk) in a single atomic word;
// every participating thread claims chunk indices from it with compare-and-swap until none are
// left, so a worker that is still asleep never delays the caller (the caller takes its chunks).
// The caller always runs chunk 0 itself, so with 2 threads each core keeps its half of the work
// (and the cache lines it reads) from run to run.
// Workers spin for MCC_SPIN_US microseconds (default 100) after each section before sleeping.
// They start with the first section that splits, not with the pool.
#include "backends/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <immintrin.h>
#define MCC_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define MCC_CPU_RELAX() asm volatile("yield")
#else
#define MCC_CPU_RELAX() ((void)0)
#endif

namespace mcc::backends {

namespace {
thread_local bool t_in_task = false;

int resolve(int threads) {
  if (threads > 0) return threads;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

int64_t spin_micros() {
  static const int64_t us = [] {
    const char* s = std::getenv("MCC_SPIN_US");
    if (!s || !*s) return int64_t{100};
    return std::max<int64_t>(0, std::atoll(s));
  }();
  return us;
}

// Ticket layout: generation in the high 32 bits, chunk count in bits 16..31, next chunk in 0..15.
constexpr uint64_t pack(uint32_t gen, uint64_t chunks, uint64_t next) {
  return (uint64_t{gen} << 32) | (chunks << 16) | next;
}
constexpr int64_t kMaxChunks = 0xffff;
}  // namespace

struct ThreadPool::Impl {
  explicit Impl(int threads) : threads(threads) {}
  ~Impl() {
    stop.store(true);
    wake.fetch_add(1);
    wake.notify_all();
    for (auto& t : workers) t.join();
  }

  // Starts the workers; called by the first parallel section that splits (holding `busy`). Until
  // then the process has no thread of ours: glibc's malloc keeps its single-thread fast paths, so
  // a model whose kernels never split (small recurrent models) runs as fast at N threads as at 1.
  void start() {
    started = true;
    workers.reserve(static_cast<size_t>(std::max(0, threads - 1)));
    for (int i = 0; i + 1 < threads; ++i) workers.emplace_back([this] { worker_loop(); });
  }

  // Claims and runs chunks of generation gen until none are left (or a newer section started).
  void run_chunks(uint32_t gen) {
    uint64_t t = ticket.load(std::memory_order_acquire);
    for (;;) {
      if (static_cast<uint32_t>(t >> 32) != gen) return;
      const uint64_t next = t & 0xffff, count = (t >> 16) & 0xffff;
      if (next >= count) return;
      if (!ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      run_chunk(static_cast<int64_t>(next));
      t = ticket.load(std::memory_order_acquire);
    }
  }

  void run_chunk(int64_t index) {
    const int64_t b = index * step, e = std::min(n, b + step);
    const bool outer = t_in_task;
    t_in_task = true;
    try {
      if (b < e) (*f)(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lock(err_mutex);
      if (!first_error) first_error = std::current_exception();
    }
    t_in_task = outer;
    remaining.fetch_sub(1, std::memory_order_acq_rel);
  }

  void worker_loop() {
    // Generation 0 is the pool's initial state: a worker that starts late still sees every
    // later bump (the destructor's included), never waits on a generation already gone.
    uint32_t seen = 0;
    for (;;) {
      uint32_t now = wake.load(std::memory_order_acquire);
      if (now == seen) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_micros());
        for (int i = 0; now == seen; ++i) {
          MCC_CPU_RELAX();
          now = wake.load(std::memory_order_acquire);
          if ((i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) break;
        }
        while (now == seen) {
          sleepers.fetch_add(1);
          wake.wait(seen);
          sleepers.fetch_sub(1);
          now = wake.load(std::memory_order_acquire);
        }
      }
      seen = now;
      if (stop.load()) return;
      run_chunks(now);
    }
  }

  const int threads;
  bool started = false;              // workers running (written under `busy`)
  std::vector<std::thread> workers;
  std::mutex busy;                   // one parallel section at a time; others run inline
  std::atomic<uint32_t> wake{0};     // generation, the futex workers sleep on
  std::atomic<uint64_t> ticket{0};   // see pack()
  std::atomic<int64_t> remaining{0};  // chunks of the current section not finished yet
  std::atomic<int> sleepers{0};
  std::atomic<bool> stop{false};
  // The current section (written before the ticket is published, stable until remaining == 0).
  const std::function<void(int64_t, int64_t)>* f = nullptr;
  int64_t n = 0, step = 0;
  std::mutex err_mutex;
  std::exception_ptr first_error;
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

int64_t ThreadPool::chunks_for(int64_t n, int64_t cost_per_item) const {
  if (n <= 1 || threads_ <= 1) return 1;
  int64_t chunks = std::min<int64_t>({threads_, n, kMaxChunks});
  if (cost_per_item > 0) {
    // n * cost may overflow for huge kernels; they split fully anyway.
    const int64_t work = cost_per_item > INT64_MAX / n ? INT64_MAX : n * cost_per_item;
    chunks = std::min<int64_t>(chunks, std::max<int64_t>(1, work / kMinWorkPerChunk));
  }
  return chunks;
}

ThreadPool::InlineScope::InlineScope() : outer_(t_in_task) { t_in_task = true; }
ThreadPool::InlineScope::~InlineScope() { t_in_task = outer_; }

void ThreadPool::parallel_for(int64_t n, int64_t cost_per_item,
                              const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  const int64_t chunks = chunks_for(n, cost_per_item);
  if (chunks <= 1 || t_in_task) { f(0, n); return; }
  Impl& im = *impl_;
  std::unique_lock<std::mutex> lock(im.busy, std::try_to_lock);
  const int64_t step = (n + chunks - 1) / chunks;
  if (!lock.owns_lock()) {  // another thread's section is running: same chunks, inline
    for (int64_t b = 0; b < n; b += step) f(b, std::min(n, b + step));
    return;
  }
  if (!im.started) im.start();
  im.f = &f;
  im.n = n;
  im.step = step;
  im.first_error = nullptr;
  const int64_t used = (n + step - 1) / step;  // chunks that are not empty
  im.remaining.store(used, std::memory_order_relaxed);
  const uint32_t gen = im.wake.load(std::memory_order_relaxed) + 1;
  // Chunk 0 is the caller's, so the same part of the work (and of the weights it reads) stays
  // with the same core run after run; the workers claim the rest.
  im.ticket.store(pack(gen, static_cast<uint64_t>(used), 1), std::memory_order_release);
  im.wake.store(gen, std::memory_order_seq_cst);
  if (im.sleepers.load(std::memory_order_seq_cst) > 0) im.wake.notify_all();
  im.run_chunk(0);
  im.run_chunks(gen);
  for (int i = 0; im.remaining.load(std::memory_order_acquire) != 0; ++i) {
    if (i < 4096) MCC_CPU_RELAX();
    else std::this_thread::yield();
  }
  im.f = nullptr;
  if (im.first_error) {
    std::exception_ptr e = im.first_error;
    im.first_error = nullptr;
    std::rethrow_exception(e);
  }
}

}  // namespace mcc::backends
