#include "trainer/ops/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define ONEGPU_PAUSE() _mm_pause()
#else
#define ONEGPU_PAUSE() std::this_thread::yield()
#endif

namespace onegpu::trainer {

namespace {
constexpr int kSpin = 2000;  // pause iterations (tens of microseconds) before sleeping
}

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_.store(true, std::memory_order_release);
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks() {
  for (int i = next_.fetch_add(1, std::memory_order_acq_rel); i < n_;
       i = next_.fetch_add(1, std::memory_order_acq_rel))
    (*fn_)(i);
}

void ThreadPool::worker_loop() {
  std::uint64_t seen = 0;
  for (;;) {
    for (int s = 0; s < kSpin && generation_.load(std::memory_order_acquire) == seen &&
                    !stop_.load(std::memory_order_acquire);
         ++s)
      ONEGPU_PAUSE();
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lk(mu_);
      cv_start_.wait(lk, [&] {
        return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
      });
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    run_chunks();
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lk(mu_);
      cv_done_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int n, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  fn_ = &fn;
  n_ = n;
  next_.store(0, std::memory_order_release);
  active_.store(static_cast<int>(workers_.size()), std::memory_order_release);
  {
    std::lock_guard<std::mutex> lk(mu_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  cv_start_.notify_all();
  run_chunks();
  for (int s = 0; s < kSpin && active_.load(std::memory_order_acquire) != 0; ++s) ONEGPU_PAUSE();
  if (active_.load(std::memory_order_acquire) != 0) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_done_.wait(lk, [&] { return active_.load(std::memory_order_acquire) == 0; });
  }
}

}  // namespace onegpu::trainer
