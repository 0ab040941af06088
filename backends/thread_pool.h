// One process-wide thread pool with a deterministic static parallel_for. The calling thread runs
// chunks itself; the size() - 1 workers (started by the first section that splits) spin briefly
// between parallel sections (so hand-offs cost a few microseconds) and then sleep on a futex. Chunk boundaries depend only on n,
// cost_per_item and size(), never on which thread runs a chunk, so results are reproducible for
// a fixed thread count. Nested calls (from inside a chunk) and calls made while another thread
// holds the pool run inline on the calling thread.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

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
  /// Work (n * cost_per_item, in rough element operations) each chunk must carry before
  /// parallel_for splits: below about this, a hand-off costs more than it saves.
  static constexpr int64_t kMinWorkPerChunk = 16 * 1024;
  /// How many chunks parallel_for splits [0, n) into (1 = inline on the calling thread).
  int64_t chunks_for(int64_t n, int64_t cost_per_item) const;
  /// Splits [0, n) into chunks_for(n, cost_per_item) contiguous chunks of equal size (the last
  /// shorter) and runs them in parallel; returns when all are done. The first exception thrown
  /// by a chunk is rethrown here after every chunk has finished.
  void parallel_for(int64_t n, int64_t cost_per_item, const std::function<void(int64_t, int64_t)>& f);
  ~ThreadPool();

  /// While one lives, parallel_for on this thread runs inline: work done once when a graph is
  /// planned does not start the workers of a process whose runs never split.
  class InlineScope {
   public:
    InlineScope();
    ~InlineScope();
    InlineScope(const InlineScope&) = delete;
    InlineScope& operator=(const InlineScope&) = delete;

   private:
    bool outer_;
  };

 private:
  explicit ThreadPool(int threads);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int threads_;
};

}  // namespace mcc::backends
