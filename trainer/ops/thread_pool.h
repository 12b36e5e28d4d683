#pragma once
// A tiny persistent worker pool. parallel_for hands out chunk indices; callers partition work
// so that every output element is computed by the same code in the same order whatever the
// thread count, which keeps results bitwise identical on 1 or 2 threads.
// Workers spin briefly before sleeping: the model issues many small parallel ops back to back.
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
  // Runs fn(i) for i in [0, n); the caller works too. Returns when all are done. Not reentrant:
  // one caller at a time.
  void parallel_for(int n, const std::function<void(int)>& fn);

 private:
  void worker_loop();
  void run_chunks();
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  const std::function<void(int)>* fn_ = nullptr;
  int n_ = 0;
  std::atomic<int> next_{0};
  std::atomic<int> active_{0};
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace onegpu::trainer
