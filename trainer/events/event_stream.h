#pragma once
// The event stream: one SpscRing<Event> per producer (each engine worker owns one) and one
// consumer that drains them all. The producer never blocks: when its ring is full the event is
// counted as dropped, and as soon as there is room again a Dropped marker (value and bytes = how
// many were lost, id = the producer index) is placed in the ring before the next event, so the consumer sees where and how
// much was lost. dropped() gives the running total at any time.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "trainer/events/event.h"
#include "trainer/events/ring.h"

namespace onegpu::trainer {

class EventStream {
 public:
  explicit EventStream(std::size_t producers, std::size_t capacity_per_producer = 1u << 16) {
    lanes_.reserve(producers);
    for (std::size_t i = 0; i < producers; ++i)
      lanes_.push_back(std::make_unique<Lane>(capacity_per_producer, i));
  }

  std::size_t producers() const { return lanes_.size(); }

  // Producer `p` only (one thread per lane). False when the event was dropped.
  bool push(std::size_t p, const Event& e) {
    Lane& lane = *lanes_[p];
    if (lane.unreported != 0 && !place_marker(lane)) {
      lane.ring.note_dropped();
      ++lane.unreported;
      return false;
    }
    if (!lane.ring.try_push(e)) {
      ++lane.unreported;
      return false;
    }
    return true;
  }

  // Producer `p` only: free slots in its ring right now. A producer that must not lose an
  // event (a test, a final loss) can wait for room itself; push() never waits.
  std::size_t room(std::size_t p) { return lanes_[p]->ring.free_slots(); }

  // Producer `p` only: place a pending Dropped marker if there is room now.
  void flush(std::size_t p) {
    Lane& lane = *lanes_[p];
    if (lane.unreported != 0) place_marker(lane);
  }

  // Consumer only: visits every event visible now, lane by lane (order within a lane kept).
  template <class F>
  std::size_t drain(F&& f) {
    std::size_t n = 0;
    for (auto& lane : lanes_) n += lane->ring.drain(f);
    return n;
  }

  // Any thread: events waiting in producer p's ring, and its capacity (for a fill gauge).
  std::size_t fill(std::size_t p) const { return lanes_[p]->ring.size_approx(); }
  std::size_t capacity(std::size_t p) const { return lanes_[p]->ring.capacity(); }

  // Any thread: events lost so far.
  std::uint64_t dropped(std::size_t p) const { return lanes_[p]->ring.dropped(); }
  std::uint64_t dropped() const {
    std::uint64_t total = 0;
    for (auto& lane : lanes_) total += lane->ring.dropped();
    return total;
  }

 private:
  struct Lane {
    Lane(std::size_t capacity, std::size_t i) : ring(capacity), index(static_cast<std::uint32_t>(i)) {}
    SpscRing<Event> ring;
    std::uint32_t index;
    std::uint64_t unreported = 0;  // producer-only: drops not yet announced by a marker
  };

  // Needs two free slots: the marker must not take the last slot from the event behind it.
  static bool place_marker(Lane& lane) {
    if (lane.ring.free_slots() < 2) return false;
    Event marker;
    marker.kind = EventKind::Dropped;
    marker.id = lane.index;  // which producer lost them
    marker.value = static_cast<double>(lane.unreported);
    marker.bytes = static_cast<std::int64_t>(lane.unreported);
    lane.ring.try_push(marker);  // cannot fail: only this producer fills the ring
    lane.unreported = 0;
    return true;
  }

  std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace onegpu::trainer
