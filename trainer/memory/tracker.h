#pragma once
// Per-rank tracking allocator: every buffer the trainer owns is charged to one category, so the
// memory picture shows measured bytes (current and peak), not a formula.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>
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
  // Bytes held without an allocation of this tracker's own (Buffer::shared).
  void charge(std::size_t bytes, MemCategory c);
  void uncharge(std::size_t bytes, MemCategory c);
  MemStats stats() const;
  std::int64_t current(MemCategory c) const;
  std::int64_t peak(MemCategory c) const;
  void reset_peaks();  // peak := current, e.g. at the start of a step
  // From now on blocks come from `dev` (which must outlive the tracker); null = host memory.
  // Only before the first allocation: a block must be released to the memory it came from.
  void use_device_memory(DeviceMemory* dev);
  bool on_device() const { return dev_ != nullptr; }

  // While a StandIn lives, the buffers this thread makes against `of` are charged to `by`
  // instead (and released there). For memory the simulation holds that the modelled device
  // would not: two CPU threads each run a microbatch at once (trainer/train/split_step.h), where
  // the device runs them one after the other, so the second one's activations go to a tracker
  // of their own and the memory picture stays the device's. One a thread at a time.
  class StandIn {
   public:
    StandIn(MemoryTracker& of, MemoryTracker& by);
    ~StandIn();
    StandIn(const StandIn&) = delete;
    StandIn& operator=(const StandIn&) = delete;
  };
  // This thread's stand-in for this tracker, else itself: what a new buffer is charged to.
  MemoryTracker& here();

  // While one lives, the zeroed host arrays of 256 KiB and more that this thread makes (of any
  // tracker) are cut from the pool's arena, in huge pages, instead of coming from the kernel
  // page by page: for arrays that are all written every step, too small for a huge page of
  // their own and held by the hundred (a split run's weights, gradients and optimizer state of
  // the ranks that update them). On the virtual machines this runs on a fresh 4 KiB page costs
  // some 10 us when first written, even after it was populated, and a huge page a few of
  // those. Not for arrays only partly written: a huge page comes in whole on its first write.
  class HugePageArrays {
   public:
    HugePageArrays();
    ~HugePageArrays();
    HugePageArrays(const HugePageArrays&) = delete;
    HugePageArrays& operator=(const HugePageArrays&) = delete;
  };

 private:
  DeviceMemory* dev_ = nullptr;
  // Freed blocks are kept for reuse (a training step frees and re-allocates the same sizes),
  // which spares the page faults of fresh memory, and new small ones are cut from huge pages
  // (tracker.cpp says why). The counts above are of live buffers only.
  // Host blocks go to one pool that every tracker takes from (tracker.cpp): the ranks of a
  // split run take turns on a few threads, so a block one rank frees serves the next rank's
  // op, still warm in the cache. Blocks of 256 KiB and more that must start zeroed come
  // straight from the kernel (fresh pages read as zero and cost nothing until written) and go
  // back to it when released: a rank's weights and optimizer state, of which a split run
  // holds hundreds of copies.
  // Device blocks cost far more to get again (allocation, first-touch page faults, and a free
  // that waits for the device), so a device tracker keeps a whole step's worth of its own, as
  // GPU frameworks' caching allocators do.
  static constexpr std::size_t kDeviceCacheLimit = std::size_t{32} << 30;
  static constexpr std::size_t kFreshPages = std::size_t{256} << 10;
  struct FreeList {
    std::size_t size;           // rounded size
    std::vector<void*> blocks;  // last freed first
  };
  mutable std::mutex mu_;
  MemStats s_;
  std::vector<FreeList> cache_;  // device blocks, by size: a rank uses a few dozen sizes
  std::vector<void*> fresh_;     // live blocks that came from the kernel
  std::size_t cached_bytes_ = 0;
};

// Owning, move-only buffer of T charged to a tracker category. Contents are zeroed unless
// zero=false.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(MemoryTracker& t, MemCategory c, std::size_t n, bool zero = true) : t_(&t.here()), c_(c), n_(n) {
    p_ = static_cast<T*>(t_->allocate(n * sizeof(T), c, zero));
  }
  // n elements at p, owned by another buffer that outlives this one, charged to `t` all the
  // same: for copies that hold bitwise the same values whatever happens (a split run's
  // replicas of one shard), so that each still counts what a real device would hold.
  static Buffer shared(MemoryTracker& t, MemCategory c, T* p, std::size_t n) {
    Buffer b;
    b.t_ = &t.here();
    b.c_ = c;
    b.n_ = n;
    b.p_ = p;
    b.owns_ = false;
    b.t_->charge(n * sizeof(T), c);
    return b;
  }
  bool owns() const { return owns_; }
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
    if (!p_) return;
    if (owns_)
      t_->release(p_, n_ * sizeof(T), c_);
    else
      t_->uncharge(n_ * sizeof(T), c_);
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
    std::swap(owns_, o.owns_);
  }
  MemoryTracker* t_ = nullptr;
  MemCategory c_ = MemCategory::Activations;
  std::size_t n_ = 0;
  T* p_ = nullptr;
  bool owns_ = true;
};

// Bytes charged to a tracker for as long as this lives, with no block behind them: what a device
// would hold for a buffer the host side does without (a receive buffer whose data the
// simulation copies straight to where the receiver keeps it). Move-only.
class Charge {
 public:
  Charge(MemoryTracker& t, MemCategory c, std::size_t bytes) : t_(&t.here()), c_(c), bytes_(bytes) {
    t_->charge(bytes, c);
  }
  Charge(Charge&& o) noexcept : t_(o.t_), c_(o.c_), bytes_(o.bytes_) { o.t_ = nullptr; }
  Charge(const Charge&) = delete;
  Charge& operator=(const Charge&) = delete;
  Charge& operator=(Charge&&) = delete;
  ~Charge() {
    if (t_) t_->uncharge(bytes_, c_);
  }

 private:
  MemoryTracker* t_;
  MemCategory c_;
  std::size_t bytes_;
};

// Host memory from the pool the trackers' host blocks come from (tracker.cpp), charged to no
// tracker: for arrays the simulation keeps beside the modelled device's memory (copies of
// weights, the layer caches of a microbatch), which would otherwise fault in page by page
// the first time a step uses them. 64-byte aligned; contents undefined. give_host_block takes
// the size that take_host_block was given.
void* take_host_block(std::size_t bytes);
void give_host_block(void* p, std::size_t bytes);

// A standard allocator over take_host_block, for containers of such arrays.
template <class T>
struct HostAllocator {
  using value_type = T;
  HostAllocator() = default;
  template <class U>
  HostAllocator(const HostAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(take_host_block(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) { give_host_block(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HostAllocator<U>&) const { return true; }
};

// Has the kernel hand out one more huge page of the first `until` bytes of the pool's arena
// (tracker.cpp) that is neither in nor cut yet; false when none is left. Fresh pages cost the
// virtual machines this runs on far more the first time than reused ones: a thread with
// nothing else to do (HostPoolWarmer) takes that cost ahead of the blocks' use.
bool warm_host_pool(std::size_t until);
std::size_t host_pool_cut();  // bytes of the arena cut into blocks so far

// Has the kernel hand out the host pages under [p, p + bytes) now (written as zero where they
// were fresh), so that the first writes later do not fault page by page: for arrays that
// will all be written anyway, made before the work that is timed. Host memory only.
void populate_pages(void* p, std::size_t bytes);

}  // namespace onegpu::trainer
