#include "trainer/ops/thread_pool.h"

#include "trainer/error.h"

#include "trainer/ops/cpu_pause.h"
#include "trainer/ops/start_threads.h"

namespace onegpu::trainer {

namespace {
constexpr int kSpin = 2000;  // pause iterations (tens of microseconds) before sleeping
constexpr std::uint64_t kIdxMask = (1u << 20) - 1;
int ticket_n(std::uint64_t t) { return (int)((t >> 20) & kIdxMask); }
int ticket_idx(std::uint64_t t) { return (int)(t & kIdxMask); }
}  // namespace

ThreadPool::ThreadPool(int threads) {
  start_threads(workers_, threads - 1, "a matrix worker", [this](int) { worker_loop(); }, [this] {
    std::lock_guard<std::mutex> lk(mu_);
    stop_.store(true, std::memory_order_release);
    cv_start_.notify_all();
  });
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
  for (;;) {
    std::uint64_t t = ticket_.load(std::memory_order_acquire);
    int n = ticket_n(t), i = ticket_idx(t);
    if (i >= n) return;
    if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    (*fn_)(i);
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
      std::lock_guard<std::mutex> lk(mu_);
      cv_done_.notify_all();
    }
  }
}

void ThreadPool::worker_loop() {
  std::uint64_t seen = 0;
  for (;;) {
    for (int s = 0; s < kSpin && generation_.load(std::memory_order_acquire) == seen &&
                    !stop_.load(std::memory_order_acquire);
         ++s)
      cpu_pause();
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lk(mu_);
      cv_start_.wait(lk, [&] {
        return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
      });
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    run_chunks();
  }
}

void ThreadPool::parallel_for(int n, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  if ((std::uint64_t)n > kIdxMask) throw Error("parallel_for: too many chunks");
  fn_ = &fn;
  done_.store(0, std::memory_order_release);
  std::uint64_t gen = generation_.load(std::memory_order_relaxed) + 1;
  ticket_.store(((gen & 0xffffff) << 40) | ((std::uint64_t)n << 20), std::memory_order_release);
  {
    std::lock_guard<std::mutex> lk(mu_);
    generation_.store(gen, std::memory_order_release);
  }
  cv_start_.notify_all();
  run_chunks();
  // Only chunks already claimed by a worker can be outstanding here.
  for (int s = 0; s < kSpin && done_.load(std::memory_order_acquire) != n; ++s) cpu_pause();
  if (done_.load(std::memory_order_acquire) != n) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_done_.wait(lk, [&] { return done_.load(std::memory_order_acquire) == n; });
  }
}

}  // namespace onegpu::trainer
