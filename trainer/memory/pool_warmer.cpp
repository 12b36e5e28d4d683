#include "trainer/memory/pool_warmer.h"

#include <pthread.h>
#include <sched.h>

#include "trainer/memory/tracker.h"

namespace onegpu::trainer {

HostPoolWarmer::HostPoolWarmer(std::size_t bytes) {
  const std::size_t until = host_pool_cut() + bytes;
  thread_ = std::thread([this, until] {
    // The idle class: any other runnable thread of the machine goes first. Without it (not
    // allowed here), it stops: warming on a busy core would only take time from the work.
    sched_param none{};
    if (::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &none) != 0) return;
    while (!stop_.load(std::memory_order_relaxed)) {
      if (!warm_host_pool(until)) return;  // all in (or cut)
      pages_.fetch_add(1, std::memory_order_relaxed);
    }
  });
}

HostPoolWarmer::~HostPoolWarmer() {
  stop_.store(true);
  thread_.join();
}

}  // namespace onegpu::trainer
