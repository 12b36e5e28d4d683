#pragma once
// Shared by the normal stress test and the ThreadSanitizer build: several producers push
// numbered events through one EventStream while one consumer drains it. Checks, per producer:
// strictly the next number each time (no loss, no duplicate, order kept), with every gap
// announced by a Dropped marker of exactly its size, and received + dropped == produced.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "trainer/events/event_stream.h"

namespace onegpu::trainer::stress {

struct Result {
  std::uint64_t produced = 0;
  std::uint64_t received = 0;
  std::uint64_t dropped = 0;        // EventStream::dropped() at the end
  std::uint64_t announced = 0;      // sum of Dropped markers seen
  std::uint64_t errors = 0;         // sequence violations
  std::string first_error;
};

// polite: producers wait for room (the consumer keeps up, nothing may drop).
// Otherwise producers push flat out and the consumer naps between drains.
inline Result run(int producers, std::uint32_t per_producer, std::size_t capacity, bool polite) {
  EventStream stream(static_cast<std::size_t>(producers), capacity);
  std::atomic<int> done{0};
  std::vector<std::uint64_t> next(static_cast<std::size_t>(producers), 0);
  Result r;
  r.produced = static_cast<std::uint64_t>(producers) * per_producer;

  auto check = [&](const Event& e) {
    const int producer = e.kind == EventKind::Dropped ? static_cast<int>(e.id) : e.rank;
    if (producer < 0 || producer >= producers) {
      if (r.errors++ == 0) r.first_error = "event from unknown producer";
      return;
    }
    auto& n = next[static_cast<std::size_t>(producer)];
    if (e.kind == EventKind::Dropped) {
      n += static_cast<std::uint64_t>(e.bytes);
      r.announced += static_cast<std::uint64_t>(e.bytes);
      return;
    }
    if (e.id != n && r.errors++ == 0)
      r.first_error = "producer " + std::to_string(e.rank) + " expected " + std::to_string(n) +
                      " got " + std::to_string(e.id);
    n = static_cast<std::uint64_t>(e.id) + 1;
    ++r.received;
  };

  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      const auto lane = static_cast<std::size_t>(p);
      for (std::uint32_t i = 0; i < per_producer; ++i) {
        Event e;
        e.rank = p;
        e.kind = EventKind::Probe;
        e.id = i;
        e.value = i * 0.5;
        if (polite)
          while (stream.room(lane) < 2) std::this_thread::yield();
        stream.push(lane, e);
      }
      // Announce what is still unannounced (the consumer is draining, so room comes).
      while (stream.dropped(lane) != 0 && stream.room(lane) < 2) std::this_thread::yield();
      stream.flush(lane);
      done.fetch_add(1, std::memory_order_acq_rel);
    });
  }
  // The consumer: this thread.
  while (done.load(std::memory_order_acquire) < producers) {
    if (stream.drain(check) == 0 || !polite)
      std::this_thread::sleep_for(std::chrono::microseconds(polite ? 20 : 200));
  }
  for (auto& t : threads) t.join();
  stream.drain(check);
  r.dropped = stream.dropped();
  for (int p = 0; p < producers; ++p)
    if (next[static_cast<std::size_t>(p)] != per_producer && r.errors++ == 0)
      r.first_error = "producer " + std::to_string(p) + " ended at " +
                      std::to_string(next[static_cast<std::size_t>(p)]);
  return r;
}

}  // namespace onegpu::trainer::stress
