#pragma once
// Per-rank tracking allocator: every buffer the trainer owns is charged to one category, so the
// memory picture shows measured bytes (current and peak), not a formula.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>

#include "trainer/memory/category.h"

namespace onegpu::trainer {

// Where a tracker's blocks come from when they are not plain host memory: a GPU backend supplies
// one (trainer/cuda/device_memory.cu) so that the same Buffers, categories and counts describe
// device bytes. Blocks must stay readable by the host code the model still runs (unified memory
// does this); zero() clears a block and returns once it is clear.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual void* allocate(std::size_t bytes) = 0;  // throws std::bad_alloc when out of memory
  virtual void release(void* p) = 0;
  virtual void zero(void* p, std::size_t bytes) = 0;
};

struct MemStats {
  std::array<std::int64_t, kMemCategoryCount> current{};
  std::array<std::int64_t, kMemCategoryCount> peak{};
  std::int64_t total_current() const;
};

// One per rank. Thread-safe: workers of several ranks may allocate at once.
class MemoryTracker {
 public:
  MemoryTracker() = default;
  ~MemoryTracker();
  MemoryTracker(const MemoryTracker&) = delete;
  MemoryTracker& operator=(const MemoryTracker&) = delete;
  // zero=false leaves the contents undefined (for buffers the caller overwrites completely).
  void* allocate(std::size_t bytes, MemCategory c, bool zero = true);
  void release(void* p, std::size_t bytes, MemCategory c);
  MemStats stats() const;
  std::int64_t current(MemCategory c) const;
  std::int64_t peak(MemCategory c) const;
  void reset_peaks();  // peak := current, e.g. at the start of a step
  // From now on blocks come from `dev` (which must outlive the tracker); null = host memory.
  // Only before the first allocation: a block must be released to the memory it came from.
  void use_device_memory(DeviceMemory* dev);
  bool on_device() const { return dev_ != nullptr; }

 private:
  DeviceMemory* dev_ = nullptr;
  // Freed blocks are kept for reuse (a training step frees and re-allocates the same sizes),
  // which spares the page faults of fresh memory. The counts above are of live buffers only.
  static constexpr std::size_t kCacheLimit = std::size_t{64} << 20;  // per tracker (per rank)
  // Device blocks cost far more to get again (allocation, first-touch page faults, and a free
  // that waits for the device), so a device tracker keeps a whole step's worth, as GPU
  // frameworks' caching allocators do.
  static constexpr std::size_t kDeviceCacheLimit = std::size_t{32} << 30;
  std::size_t cache_limit_ = kCacheLimit;
  mutable std::mutex mu_;
  MemStats s_;
  std::multimap<std::size_t, void*> cache_;  // rounded size -> block
  std::size_t cached_bytes_ = 0;
};

// Owning, move-only buffer of T charged to a tracker category. Contents are zeroed unless
// zero=false.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(MemoryTracker& t, MemCategory c, std::size_t n, bool zero = true) : t_(&t), c_(c), n_(n) {
    p_ = static_cast<T*>(t.allocate(n * sizeof(T), c, zero));
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      Buffer tmp(std::move(o));
      swap(tmp);
    }
    return *this;
  }
  ~Buffer() {
    if (p_) t_->release(p_, n_ * sizeof(T), c_);
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  std::size_t size() const { return n_; }
  T& operator[](std::size_t i) { return p_[i]; }
  const T& operator[](std::size_t i) const { return p_[i]; }
  T* begin() { return p_; }
  T* end() { return p_ + n_; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + n_; }
  bool empty() const { return n_ == 0; }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(t_, o.t_);
    std::swap(c_, o.c_);
    std::swap(n_, o.n_);
    std::swap(p_, o.p_);
  }
  MemoryTracker* t_ = nullptr;
  MemCategory c_ = MemCategory::Activations;
  std::size_t n_ = 0;
  T* p_ = nullptr;
};

}  // namespace onegpu::trainer
