#include "trainer/memory/tracker.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

// Blocks below this come from the arena for take_host_block: arrays the simulation keeps.
constexpr std::size_t kHostBlockCarve = std::size_t{16} << 20;

// The host blocks every tracker has released, by rounded size, last released first (taken
// again warm in the cache): one pool for all trackers (tracker.h).
// The pool is cut in stripes, one a thread (threads share one past kStripes), each with its own
// lock: a thread gives blocks back to its own stripe and takes from it first, so two threads
// running ranks side by side do not queue on one lock for every buffer (a 512-rank step makes
// and frees some half a million), and the block a thread takes is one it wrote last, still in
// its core's cache (one another core wrote arrives cold, its lines taken from that core as
// they are written: two threads each running a microbatch were some 5% slower that way). A
// stripe with none of a size takes one from another stripe before cutting a new one.
// A size no released block fits is carved from an arena: one reserve of address space, cut
// block after block and advised for transparent huge pages. On the virtual machines this runs
// on, the first write to a fresh 4 KiB page costs some 10 us (a 512-rank split run's first
// step took 200,000 of them, over 2 s); one 2 MiB page costs about what 30 small ones do and
// brings 512. Cut densely, the blocks waste at most the one huge page being filled. The
// arena's blocks are not freed one by one, only handed out again at their size, and all
// given back to the kernel once none is in use; while the arena is full the pool takes
// blocks from malloc as before, and frees those past kLimit.
class HostPool {
 public:
  // A released block of this size, else (if smaller than carve_below) a new one from the
  // arena, which reads as zero (*zeroed = true); null: the caller gets one from malloc.
  void* take(std::size_t rounded, std::size_t carve_below, bool* zeroed) {
    *zeroed = false;
    const int mine = my_stripe();
    for (int k = 0; k < kStripes; ++k)
      if (void* p = take_from(stripes_[(mine + k) % kStripes], rounded)) return p;
    if (rounded >= carve_below || !kUseArena) return nullptr;
    std::lock_guard<std::mutex> lk(arena_mu_);
    if (!arena_.load(std::memory_order_relaxed) && !reserve_arena()) return nullptr;
    const std::size_t used = arena_used_.load(std::memory_order_relaxed);
    if (used + rounded > kArenaBytes) return nullptr;  // full: malloc, as before it
    void* p = arena_.load(std::memory_order_relaxed) + used;
    live_.fetch_add(rounded, std::memory_order_relaxed);
    arena_used_.store(used + rounded, std::memory_order_release);
    *zeroed = true;
    return p;
  }
  // Brings in the next huge page of the arena's first `until` bytes that is neither in nor cut
  // yet; false when there is none (all in, or no arena). The page reads as zero still: blocks
  // cut from it are as fresh ones.
  bool warm(std::size_t until) {
    std::uint64_t* word = nullptr;
    {
      std::lock_guard<std::mutex> lk(arena_mu_);
      if (!kUseArena || (!arena_.load(std::memory_order_relaxed) && !reserve_arena())) return false;
      const std::size_t want = std::min(kArenaBytes, (until + kHugePage - 1) / kHugePage * kHugePage);
      const std::size_t used = arena_used_.load(std::memory_order_relaxed);
      const std::size_t from = std::max(warmed_, (used + kHugePage - 1) / kHugePage * kHugePage);
      if (from >= want) return false;
      warmed_ = from + kHugePage;
      word = reinterpret_cast<std::uint64_t*>(arena_.load(std::memory_order_relaxed) + from);
    }
    // A write fault from user space, outside the lock: the kernel holds only the arena's own
    // mapping lock meanwhile (madvise(MADV_POPULATE_WRITE) would hold the whole process's
    // mapping lock, and stall every mmap of other threads while this idle-class thread waits
    // for a core). An atomic add of zero: a block cut into the page meanwhile keeps its value.
    __atomic_fetch_add(word, 0, __ATOMIC_RELAXED);
    return true;
  }
  std::size_t cut() { return arena_used_.load(std::memory_order_acquire); }
  // give_pages: a carved block's whole pages go back to the kernel now (it keeps its place in
  // the arena, and reads as written again only once taken and zeroed).
  bool keep(void* p, std::size_t rounded, bool give_pages = false) {  // false: the pool is full, free it
    const bool carved = in_arena(p);  // not freed alone: only this pool hands it out again
    if (carved && give_pages) {
      const auto page = (std::uintptr_t)::sysconf(_SC_PAGESIZE);
      const std::uintptr_t a = ((std::uintptr_t)p + page - 1) / page * page, b = ((std::uintptr_t)p + rounded) / page * page;
      if (b > a) ::madvise((void*)a, b - a, MADV_DONTNEED);
    }
    if (!carved && bytes_.load(std::memory_order_relaxed) + rounded > kLimit) return false;
    bool emptied = false;
    {
      Stripe& s = stripes_[my_stripe()];
      std::lock_guard<std::mutex> lk(s.mu);
      auto it = find(s, rounded);
      if (it == s.lists.end() || it->size != rounded) it = s.lists.insert(it, List{rounded, {}});
      it->blocks.push_back(p);
      if (!carved)
        bytes_.fetch_add(rounded, std::memory_order_relaxed);
      else
        emptied = live_.fetch_sub(rounded, std::memory_order_relaxed) == rounded;
    }
    if (emptied) empty_arena();
    return true;
  }

 private:
  struct List {
    std::size_t size;
    std::vector<void*> blocks;  // last given back last
  };
  struct alignas(64) Stripe {  // a cache line of its own: the lock is what two threads touch
    std::mutex mu;
    std::vector<List> lists;  // by size
  };
  static constexpr int kStripes = 16;
  static int my_stripe() {
    static std::atomic<int> threads{0};
    thread_local const int s = threads.fetch_add(1, std::memory_order_relaxed) % kStripes;
    return s;
  }
  static std::vector<List>::iterator find(Stripe& s, std::size_t rounded) {
    return std::lower_bound(s.lists.begin(), s.lists.end(), rounded, [](const List& l, std::size_t n) { return l.size < n; });
  }
  void* take_from(Stripe& s, std::size_t rounded) {
    std::lock_guard<std::mutex> lk(s.mu);
    auto it = find(s, rounded);
    if (it == s.lists.end() || it->size != rounded || it->blocks.empty()) return nullptr;
    void* p = it->blocks.back();
    it->blocks.pop_back();
    // Counted under the stripe's lock: empty_arena, holding every stripe's, sees it.
    if (in_arena(p))
      live_.fetch_add(rounded, std::memory_order_relaxed);
    else
      bytes_.fetch_sub(rounded, std::memory_order_relaxed);
    return p;
  }
  // Address space for the arena, taken once; pages cost nothing until first written.
  bool reserve_arena() {
    void* m = ::mmap(nullptr, kArenaBytes + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
    if (m == MAP_FAILED) return false;
    const auto a = ((std::uintptr_t)m + kHugePage - 1) / kHugePage * kHugePage;  // whole huge pages
#ifdef MADV_HUGEPAGE
    ::madvise(reinterpret_cast<char*>(a), kArenaBytes, MADV_HUGEPAGE);  // a hint: without it, 4 KiB pages as before
#endif
    arena_.store(reinterpret_cast<char*>(a), std::memory_order_release);
    return true;
  }
  // No block of the arena is in use (every trainer is gone): its pages go back to the kernel
  // and it is cut again from the start. Under every lock, and only if still none is in use: a
  // thread may have taken one back meanwhile.
  void empty_arena() {
    std::lock_guard<std::mutex> la(arena_mu_);
    std::unique_lock<std::mutex> ls[kStripes];
    for (int k = 0; k < kStripes; ++k) ls[k] = std::unique_lock<std::mutex>(stripes_[k].mu);
    if (live_.load(std::memory_order_relaxed) != 0) return;
    for (Stripe& s : stripes_)
      for (List& l : s.lists) std::erase_if(l.blocks, [&](void* b) { return in_arena(b); });
    const std::size_t used = arena_used_.load(std::memory_order_relaxed);
    ::madvise(arena_.load(std::memory_order_relaxed), std::max(used, warmed_), MADV_DONTNEED);
    arena_used_.store(0, std::memory_order_release);
    warmed_ = 0;
  }
  // A block below the cut stays below it while it is out: the arena is cut again from the
  // start only when no block of it is out.
  bool in_arena(void* p) const {
    char* a = arena_.load(std::memory_order_acquire);
    return a && (char*)p >= a && (char*)p < a + arena_used_.load(std::memory_order_acquire);
  }
  static constexpr std::size_t kLimit = std::size_t{512} << 20;
#if defined(__SANITIZE_ADDRESS__)
  static constexpr bool kUseArena = false;  // malloc's blocks, so that overruns are caught
#else
  static constexpr bool kUseArena = true;
#endif
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  static constexpr std::size_t kArenaBytes = std::size_t{2} << 30;
  Stripe stripes_[kStripes];
  std::mutex arena_mu_;  // arena_ being set, the arena cut or emptied, warmed_
  std::atomic<char*> arena_{nullptr};
  std::atomic<std::size_t> arena_used_{0};
  std::size_t warmed_ = 0;  // the arena's pages below this were handed out by warm()
  std::atomic<std::size_t> live_{0};   // bytes of the arena's blocks handed out and not yet back
  std::atomic<std::size_t> bytes_{0};  // bytes of malloc's blocks kept
};

// Never destroyed, so a tracker that outlives static destruction can still release into it;
// the blocks it holds at exit stay reachable.
HostPool& host_pool() {
  static HostPool* pool = new HostPool;
  return *pool;
}
}  // namespace

namespace {
struct StandInSlot {
  MemoryTracker* of = nullptr;
  MemoryTracker* by = nullptr;
};
thread_local StandInSlot stand_in;
}  // namespace

MemoryTracker::StandIn::StandIn(MemoryTracker& of, MemoryTracker& by) {
  if (stand_in.of) throw std::logic_error("MemoryTracker::StandIn: this thread has one already");
  stand_in = {&of, &by};
}
MemoryTracker::StandIn::~StandIn() { stand_in = {}; }

MemoryTracker& MemoryTracker::here() { return stand_in.of == this ? *stand_in.by : *this; }

namespace {
thread_local int huge_arrays = 0;  // HugePageArrays alive on this thread
// Arrays cut from the arena under HugePageArrays: up to this size (a split rank's arrays are
// 0.7-1.6 MiB; larger ones get huge pages of their own from the kernel only if asked).
constexpr std::size_t kHugeArrayCarve = std::size_t{16} << 20;
}  // namespace

MemoryTracker::HugePageArrays::HugePageArrays() { ++huge_arrays; }
MemoryTracker::HugePageArrays::~HugePageArrays() { --huge_arrays; }

void* MemoryTracker::allocate(std::size_t bytes, MemCategory c, bool zero) {
  // 64-byte alignment keeps rows cache-line aligned for the vectorised kernels.
  const std::size_t rounded = rounded_size(bytes);
  void* p = nullptr;
  bool fresh = false, zeroed = false;  // fresh: from mmap (so zeroed too)
  if (zero && !dev_ && rounded >= kFreshPages) {  // device blocks come from dev_ only
    // Under HugePageArrays from the arena while it has room, else fresh pages from the kernel.
    if (huge_arrays > 0 && rounded < kHugeArrayCarve) p = host_pool().take(rounded, kHugeArrayCarve, &zeroed);
    if (!p) {
      p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      fresh = zeroed = true;
    }
  } else if (!dev_) {
    p = host_pool().take(rounded, kFreshPages, &zeroed);
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
  if (p && zero && !zeroed) {
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
  // An array of HugePageArrays (the arena's only blocks this large that come through here):
  // its pages go back, as a fresh array's would, instead of staying in while the arena does.
  if (p && !fresh && !dev_) keep = host_pool().keep(p, rounded, rounded >= kFreshPages);
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

void* take_host_block(std::size_t bytes) {
  const std::size_t rounded = rounded_size(bytes ? bytes : 1);
  bool zeroed = false;
  void* p = host_pool().take(rounded, kHostBlockCarve, &zeroed);
  if (!p) p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  return p;
}

void give_host_block(void* p, std::size_t bytes) {
  if (!p) return;
  if (!host_pool().keep(p, rounded_size(bytes ? bytes : 1))) std::free(p);
}

bool warm_host_pool(std::size_t until) { return host_pool().warm(until); }
std::size_t host_pool_cut() { return host_pool().cut(); }

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
