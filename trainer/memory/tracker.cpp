#include "trainer/memory/tracker.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
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
  for (auto& list : cache_)
    for (void* p : list.blocks) {
      if (dev_)
        dev_->release(p);
      else
        std::free(p);
    }
  // Fresh blocks still live belong to buffers that outlive their tracker: a misuse the
  // buffers' own destructors would trip on; nothing to free here.
}

void MemoryTracker::use_device_memory(DeviceMemory* dev) {
  std::lock_guard<std::mutex> lk(mu_);
  bool used = !cache_.empty() || !fresh_.empty();
  for (auto v : s_.peak) used |= v != 0;
  if (used) throw std::logic_error("MemoryTracker::use_device_memory: call it before the first allocation");
  dev_ = dev;
}

namespace {
std::size_t rounded_size(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

// The host blocks every tracker has released, by rounded size, last released first (taken
// again warm in the cache): one pool for all trackers (tracker.h).
class HostPool {
 public:
  void* take(std::size_t rounded) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = find(rounded);
    if (it == lists_.end() || it->size != rounded || it->blocks.empty()) return nullptr;
    void* p = it->blocks.back();
    it->blocks.pop_back();
    bytes_ -= rounded;
    return p;
  }
  bool keep(void* p, std::size_t rounded) {  // false: the pool is full, free it
    std::lock_guard<std::mutex> lk(mu_);
    if (bytes_ + rounded > kLimit) return false;
    auto it = find(rounded);
    if (it == lists_.end() || it->size != rounded) it = lists_.insert(it, List{rounded, {}});
    it->blocks.push_back(p);
    bytes_ += rounded;
    return true;
  }

 private:
  struct List {
    std::size_t size;
    std::vector<void*> blocks;
  };
  std::vector<List>::iterator find(std::size_t rounded) {
    return std::lower_bound(lists_.begin(), lists_.end(), rounded, [](const List& l, std::size_t n) { return l.size < n; });
  }
  static constexpr std::size_t kLimit = std::size_t{512} << 20;
  std::mutex mu_;
  std::vector<List> lists_;
  std::size_t bytes_ = 0;
};

// Never destroyed, so a tracker that outlives static destruction can still release into it;
// the blocks it holds at exit stay reachable.
HostPool& host_pool() {
  static HostPool* pool = new HostPool;
  return *pool;
}
}  // namespace

void* MemoryTracker::allocate(std::size_t bytes, MemCategory c, bool zero) {
  // 64-byte alignment keeps rows cache-line aligned for the vectorised kernels.
  const std::size_t rounded = rounded_size(bytes);
  void* p = nullptr;
  bool fresh = false;
  if (zero && !dev_ && rounded >= kFreshPages) {  // device blocks come from dev_ only
    p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    fresh = true;
  } else if (!dev_) {
    p = host_pool().take(rounded);
  } else {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = std::lower_bound(cache_.begin(), cache_.end(), rounded,
                               [](const FreeList& f, std::size_t n) { return f.size < n; });
    if (it != cache_.end() && it->size == rounded && !it->blocks.empty()) {
      p = it->blocks.back();
      it->blocks.pop_back();
      cached_bytes_ -= rounded;
    }
  }
  if (!p && rounded) {
    p = dev_ ? dev_->allocate(rounded) : std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
  }
  if (p && zero && !fresh) {
    if (dev_)
      dev_->zero(p, rounded);
    else
      std::memset(p, 0, rounded);
  }
  std::lock_guard<std::mutex> lk(mu_);
  if (fresh) fresh_.push_back(p);
  auto i = static_cast<int>(c);
  s_.current[i] += static_cast<std::int64_t>(bytes);
  if (s_.current[i] > s_.peak[i]) s_.peak[i] = s_.current[i];
  return p;
}

void MemoryTracker::release(void* p, std::size_t bytes, MemCategory c) {
  const std::size_t rounded = rounded_size(bytes);
  bool keep = false, fresh = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    s_.current[static_cast<int>(c)] -= static_cast<std::int64_t>(bytes);
    if (p && rounded >= kFreshPages) {
      auto f = std::find(fresh_.begin(), fresh_.end(), p);
      if (f != fresh_.end()) {
        *f = fresh_.back();
        fresh_.pop_back();
        fresh = true;
      }
    }
    if (p && !fresh && dev_ && cached_bytes_ + rounded <= kDeviceCacheLimit) {
      auto it = std::lower_bound(cache_.begin(), cache_.end(), rounded,
                                 [](const FreeList& f, std::size_t n) { return f.size < n; });
      if (it == cache_.end() || it->size != rounded) it = cache_.insert(it, FreeList{rounded, {}});
      it->blocks.push_back(p);
      cached_bytes_ += rounded;
      keep = true;
    }
  }
  if (p && !fresh && !dev_) keep = host_pool().keep(p, rounded);
  if (fresh)
    ::munmap(p, rounded);
  else if (!keep && dev_ && p)
    dev_->release(p);
  else if (!keep)
    std::free(p);
}

void MemoryTracker::charge(std::size_t bytes, MemCategory c) {
  std::lock_guard<std::mutex> lk(mu_);
  auto i = static_cast<int>(c);
  s_.current[i] += static_cast<std::int64_t>(bytes);
  if (s_.current[i] > s_.peak[i]) s_.peak[i] = s_.current[i];
}

void MemoryTracker::uncharge(std::size_t bytes, MemCategory c) {
  std::lock_guard<std::mutex> lk(mu_);
  s_.current[static_cast<int>(c)] -= static_cast<std::int64_t>(bytes);
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

void populate_pages(void* p, std::size_t bytes) {
  if (!p || bytes == 0) return;
  const auto page = (std::uintptr_t)::sysconf(_SC_PAGESIZE);
  const std::uintptr_t a = (std::uintptr_t)p / page * page, b = ((std::uintptr_t)p + bytes + page - 1) / page * page;
#ifdef MADV_POPULATE_WRITE
  if (::madvise((void*)a, b - a, MADV_POPULATE_WRITE) == 0) return;
#endif
  // Older kernels: touch each page (a read-modify-write of one byte leaves the contents as
  // they were; other threads do not use these arrays yet).
  for (std::uintptr_t q = std::max(a, (std::uintptr_t)p); q < (std::uintptr_t)p + bytes; q += page) {
    volatile char* c = (volatile char*)q;
    *c = *c;
  }
}

}  // namespace onegpu::trainer
