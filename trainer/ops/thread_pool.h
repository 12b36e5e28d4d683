#pragma once
// A tiny persistent worker pool. parallel_for hands out chunk indices; callers partition work
// so that every output element is computed by the same code in the same order whatever the
// thread count, which keeps results bitwise identical on 1 or 2 threads.
// The caller runs chunks too and never waits for a worker that has not claimed one, so a busy
// machine (a worker not scheduled) costs no more than running on one thread. Workers spin
// briefly before sleeping: the model issues many small parallel ops back to back.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace onegpu::trainer {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Runs fn(i) for i in [0, n); returns when all are done. One caller at a time (not
  // reentrant). n must be below 2^20.
  void parallel_for(int n, const std::function<void(int)>& fn);

 private:
  void worker_loop();
  void run_chunks();
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  const std::function<void(int)>* fn_ = nullptr;
  // Claim ticket: generation (24 bits) | chunk count n (20 bits) | next chunk (20 bits). A
  // successful claim of a chunk below n proves that job is still running, so fn_ is its own.
  std::atomic<std::uint64_t> ticket_{0};
  std::atomic<int> done_{0};
  std::atomic<std::uint64_t> generation_{0};  // wakes sleeping workers
  std::atomic<bool> stop_{false};
};

}  // namespace onegpu::trainer
