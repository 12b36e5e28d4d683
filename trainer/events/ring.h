#pragma once
// A bounded single-producer / single-consumer ring. Lock-free and wait-free on both sides:
// try_push never blocks the producer (a full ring counts the item as dropped and says so) and
// pop never blocks the consumer. Ordering is carried by acquire/release on the two index
// atomics themselves (no standalone fences, which ThreadSanitizer does not model).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

namespace onegpu::trainer {

template <class T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  // capacity is rounded up to a power of two (at least 2).
  explicit SpscRing(std::size_t capacity) {
    std::size_t c = 2;
    while (c < capacity) c <<= 1;
    mask_ = c - 1;
    slots_ = std::make_unique<T[]>(c);
  }
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  std::size_t capacity() const { return mask_ + 1; }

  // Producer side. Returns false (and counts a drop) when the ring is full.
  bool try_push(const T& item) {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);  // only we write it
    if (tail - head_cache_ > mask_) {
      head_cache_ = head_.load(std::memory_order_acquire);  // see the consumer's frees
      if (tail - head_cache_ > mask_) {
        dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        return false;
      }
    }
    slots_[tail & mask_] = item;
    tail_.store(tail + 1, std::memory_order_release);  // publishes the slot
    return true;
  }

  // Free slots as the producer sees them right now (used to place a "dropped" marker).
  std::size_t free_slots() {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    head_cache_ = head_.load(std::memory_order_acquire);
    return capacity() - static_cast<std::size_t>(tail - head_cache_);
  }

  // Consumer side.
  bool pop(T& out) {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);  // only we write it
    if (head == tail_cache_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);  // see the producer's writes
      if (head == tail_cache_) return false;
    }
    out = slots_[head & mask_];
    head_.store(head + 1, std::memory_order_release);  // hands the slot back
    return true;
  }

  // Pops everything visible now into f(const T&); returns how many.
  template <class F>
  std::size_t drain(F&& f) {
    std::uint64_t head = head_.load(std::memory_order_relaxed);
    const std::uint64_t tail = tail_.load(std::memory_order_acquire);
    std::size_t n = 0;
    while (head != tail) {
      f(static_cast<const T&>(slots_[head & mask_]));
      ++head;
      ++n;
      // Hand slots back in batches of up to 64 so a long drain frees room early.
      if ((n & 63) == 0) head_.store(head, std::memory_order_release);
    }
    head_.store(head, std::memory_order_release);
    tail_cache_ = tail;  // keeps pop()'s fast path from reading past what was published
    return n;
  }

  // Items waiting to be popped, as seen now (any thread; exact only when both sides rest).
  std::size_t size_approx() const {
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    const std::uint64_t tail = tail_.load(std::memory_order_acquire);
    return tail > head ? static_cast<std::size_t>(tail - head) : 0;
  }

  // Producer side: count an item the producer chose to drop without trying to push it.
  void note_dropped() {
    dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  // Total items the producer could not push (monotonic; readable from any thread).
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_acquire); }

 private:
  static constexpr std::size_t kLine = 64;
  // Producer-owned and consumer-owned fields live on separate cache lines.
  alignas(kLine) std::atomic<std::uint64_t> tail_{0};
  std::uint64_t head_cache_ = 0;  // producer's last view of head_
  std::atomic<std::uint64_t> dropped_{0};
  alignas(kLine) std::atomic<std::uint64_t> head_{0};
  std::uint64_t tail_cache_ = 0;  // consumer's last view of tail_
  alignas(kLine) std::size_t mask_ = 0;
  std::unique_ptr<T[]> slots_;
};

}  // namespace onegpu::trainer
