#pragma once
// A thread that, while it lives, brings in the host pool's arena pages ahead of the blocks cut
// from it (warm_host_pool, tracker.h) at the idle scheduling class: it runs only on a core
// nothing else wants. On the virtual machines this runs on, a fresh 2 MiB page costs some
// 3 ms the first time it is written; a 512-rank split run cuts about 800 MB of blocks in its
// first step, on cores that its set-up leaves partly idle (one compiles the plans alone) and
// its first step leaves idle between ops. It brings in the `bytes` past what is cut when it
// starts; they go back with the arena (tracker.cpp).
#include <atomic>
#include <cstddef>
#include <thread>

namespace onegpu::trainer {

class HostPoolWarmer {
 public:
  explicit HostPoolWarmer(std::size_t bytes);
  ~HostPoolWarmer();  // stops after the page in progress
  HostPoolWarmer(const HostPoolWarmer&) = delete;
  HostPoolWarmer& operator=(const HostPoolWarmer&) = delete;
  std::size_t pages() const { return pages_.load(); }  // huge pages it brought in so far

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> pages_{0};
  std::thread thread_;
};

}  // namespace onegpu::trainer
