#include "trainer/memory/tracker.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace onegpu::trainer {

std::string_view mem_category_name(MemCategory c) {
  switch (c) {
    case MemCategory::Weights: return "weights";
    case MemCategory::Gradients: return "gradients";
    case MemCategory::Optimizer: return "optimizer";
    case MemCategory::Activations: return "activations";
    case MemCategory::Communication: return "communication";
  }
  return "?";
}

std::int64_t MemStats::total_current() const {
  std::int64_t s = 0;
  for (auto v : current) s += v;
  return s;
}

MemoryTracker::~MemoryTracker() {
  for (auto& [size, p] : cache_) {
    if (dev_)
      dev_->release(p);
    else
      std::free(p);
  }
}

void MemoryTracker::use_device_memory(DeviceMemory* dev) {
  std::lock_guard<std::mutex> lk(mu_);
  bool used = !cache_.empty();
  for (auto v : s_.peak) used |= v != 0;
  if (used) throw std::logic_error("MemoryTracker::use_device_memory: call it before the first allocation");
  dev_ = dev;
  cache_limit_ = dev ? kDeviceCacheLimit : kCacheLimit;
}

void* MemoryTracker::allocate(std::size_t bytes, MemCategory c, bool zero) {
  // 64-byte alignment keeps rows cache-line aligned for the vectorised kernels.
  std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = cache_.find(rounded);
    if (it != cache_.end()) {
      p = it->second;
      cache_.erase(it);
      cached_bytes_ -= rounded;
    }
  }
  if (!p && rounded) {
    p = dev_ ? dev_->allocate(rounded) : std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
  }
  if (p && zero) {
    if (dev_)
      dev_->zero(p, rounded);
    else
      std::memset(p, 0, rounded);
  }
  std::lock_guard<std::mutex> lk(mu_);
  auto i = static_cast<int>(c);
  s_.current[i] += static_cast<std::int64_t>(bytes);
  if (s_.current[i] > s_.peak[i]) s_.peak[i] = s_.current[i];
  return p;
}

void MemoryTracker::release(void* p, std::size_t bytes, MemCategory c) {
  std::size_t rounded = (bytes + 63) / 64 * 64;
  bool keep = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    s_.current[static_cast<int>(c)] -= static_cast<std::int64_t>(bytes);
    if (p && cached_bytes_ + rounded <= cache_limit_) {
      cache_.emplace(rounded, p);
      cached_bytes_ += rounded;
      keep = true;
    }
  }
  if (!keep) {
    if (dev_ && p)
      dev_->release(p);
    else
      std::free(p);
  }
}

MemStats MemoryTracker::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return s_;
}
std::int64_t MemoryTracker::current(MemCategory c) const {
  std::lock_guard<std::mutex> lk(mu_);
  return s_.current[static_cast<int>(c)];
}
std::int64_t MemoryTracker::peak(MemCategory c) const {
  std::lock_guard<std::mutex> lk(mu_);
  return s_.peak[static_cast<int>(c)];
}
void MemoryTracker::reset_peaks() {
  std::lock_guard<std::mutex> lk(mu_);
  s_.peak = s_.current;
}

}  // namespace onegpu::trainer
