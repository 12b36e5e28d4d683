// The host pool behind MemoryTracker and take_host_block: blocks come back zeroed when asked,
// a released block serves the next request of its size, the counts are of the bytes asked for,
// and (outside sanitizer builds, where blocks come from malloc) the arena's pages go back to
// the kernel once no block of it is in use, those brought in ahead of use too.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "trainer/memory/pool_warmer.h"
#include "trainer/memory/tracker.h"

namespace onegpu::trainer {
namespace {

bool all_zero(const float* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != 0.f) return false;
  return true;
}

TEST(HostPool, ZeroedBlocksReadAsZeroAgainAfterReuse) {
  MemoryTracker t;
  const std::size_t n = 1000;  // 4000 bytes: a small block
  const float* first = nullptr;
  {
    Buffer<float> a(t, MemCategory::Activations, n);
    EXPECT_TRUE(all_zero(a.data(), n));
    EXPECT_EQ((std::uintptr_t)a.data() % 64, 0u);
    for (auto& v : a) v = 3.f;
    first = a.data();
  }
  Buffer<float> b(t, MemCategory::Activations, n);
  EXPECT_EQ(b.data(), first);  // the block just released, warm
  EXPECT_TRUE(all_zero(b.data(), n));
}

TEST(HostPool, CountsAreOfTheBytesAskedFor) {
  MemoryTracker t;
  {
    Buffer<float> a(t, MemCategory::Activations, 3);  // 12 bytes, a 64-byte block
    Buffer<float> g(t, MemCategory::Gradients, 100000, false);
    EXPECT_EQ(t.current(MemCategory::Activations), 12);
    EXPECT_EQ(t.current(MemCategory::Gradients), 400000);
  }
  EXPECT_EQ(t.current(MemCategory::Activations), 0);
  EXPECT_EQ(t.peak(MemCategory::Gradients), 400000);
}

TEST(HostPool, HostBlocksAreAlignedAndReused) {
  void* p = take_host_block(5000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ((std::uintptr_t)p % 64, 0u);
  std::memset(p, 7, 5000);
  give_host_block(p, 5000);
  void* q = take_host_block(5000);
  EXPECT_EQ(q, p);
  give_host_block(q, 5000);
  std::vector<int, HostAllocator<int>> v(3000, 5);
  v.resize(9000, 6);
  EXPECT_EQ(v[2999], 5);
  EXPECT_EQ(v[8999], 6);
}

// Threads making and freeing buffers at once, some freed by another thread than the one that
// made them (so blocks move between the pool's stripes): no block is ever handed to two live
// buffers (each is filled with its own pattern and checked before it goes), a zeroed one reads
// as zero, and every byte is uncharged at the end.
TEST(HostPool, ThreadsNeverShareABlock) {
  MemoryTracker t;
  constexpr int kThreads = 4, kRounds = 4000;
  const std::size_t sizes[] = {16, 64, 1000, 1024, 4096, 20000, 70000};
  std::mutex mu;
  std::deque<std::pair<Buffer<float>, float>> handed;  // made by one thread, freed by another
  std::atomic<int> bad{0};
  auto intact = [](const Buffer<float>& b, float v) {
    for (float x : b)
      if (x != v) return false;
    return true;
  };
  auto work = [&](int id) {
    std::mt19937 rng(1234u + (unsigned)id);
    std::vector<std::pair<Buffer<float>, float>> live;
    for (int i = 0; i < kRounds; ++i) {
      const std::size_t n = sizes[rng() % std::size(sizes)];
      const bool zero = rng() % 2 == 0;
      Buffer<float> b(t, MemCategory::Activations, n, zero);
      if (zero && !all_zero(b.data(), n)) bad.fetch_add(1);
      const float v = (float)(id * kRounds + i + 1);
      std::fill(b.begin(), b.end(), v);
      live.emplace_back(std::move(b), v);
      if (live.size() > 12) {  // free one: here, or hand it to whichever thread comes next
        const std::size_t k = rng() % live.size();
        if (!intact(live[k].first, live[k].second)) bad.fetch_add(1);
        if (rng() % 3 == 0) {
          std::lock_guard<std::mutex> lk(mu);
          handed.push_back(std::move(live[k]));
        }
        live.erase(live.begin() + (std::ptrdiff_t)k);
      }
      std::pair<Buffer<float>, float> theirs;
      {
        std::lock_guard<std::mutex> lk(mu);
        if (!handed.empty() && rng() % 2 == 0) {
          theirs = std::move(handed.front());
          handed.pop_front();
        }
      }
      if (theirs.first.size() && !intact(theirs.first, theirs.second)) bad.fetch_add(1);
    }
    for (auto& [b, v] : live)
      if (!intact(b, v)) bad.fetch_add(1);
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(work, i);
  for (auto& th : threads) th.join();
  for (auto& [b, v] : handed)
    if (!intact(b, v)) bad.fetch_add(1);
  handed.clear();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(t.current(MemCategory::Activations), 0);
}

#if !defined(__SANITIZE_ADDRESS__)
long resident_kb() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

TEST(HostPool, ArenaPagesGoBackWhenNoBlockIsInUse) {
  const long before = resident_kb();
  {
    MemoryTracker t;
    std::vector<Buffer<float>> held;
    for (int i = 0; i < 16384; ++i) {  // 64 MiB of 4 KiB blocks, all written
      held.emplace_back(t, MemCategory::Activations, 1024, false);
      std::memset(held.back().data(), 1, 4096);
    }
    EXPECT_GT(resident_kb() - before, 48 * 1024);
  }
  // Every block of this test is back; other tests' trackers are gone too.
  EXPECT_LT(resident_kb() - before, 16 * 1024);
}

// Pages of the arena brought in ahead of use (warm_host_pool, HostPoolWarmer) are really in,
// still read as zero when cut into blocks, go no further than asked, and go back to the
// kernel with the rest of the arena.
TEST(HostPool, WarmedPagesComeInReadAsZeroAndGoBack) {
  const long before = resident_kb();
  {
    MemoryTracker t;
    Buffer<float> first(t, MemCategory::Activations, 1024);  // the arena in use from here
    const std::size_t until = host_pool_cut() + (std::size_t{16} << 20);
    int pages = 0;
    while (warm_host_pool(until)) ++pages;
    EXPECT_GE(pages, 7);   // 16 MiB past the cut, from the next whole 2 MiB page
    EXPECT_LE(pages, 9);
    EXPECT_FALSE(warm_host_pool(host_pool_cut()));  // nothing below the cut
    EXPECT_GT(resident_kb() - before, 12 * 1024);
    std::vector<Buffer<float>> held;
    bool zero = true;
    for (int i = 0; i < 4096; ++i) {  // 16 MiB of 4 KiB blocks over the warmed pages
      held.emplace_back(t, MemCategory::Activations, 1024);
      zero &= all_zero(held.back().data(), 1024);
      held.back()[0] = 1.f;
    }
    EXPECT_TRUE(zero);
    {
      HostPoolWarmer w(std::size_t{4} << 20);  // stops and joins whatever it got to
    }
  }
  EXPECT_LT(resident_kb() - before, 16 * 1024);
}

// HugePageArrays: zeroed arrays of 256 KiB and more made on this thread while one lives are cut
// from the arena (its cut grows by their size) and read as zero, also when a block written
// before is taken again; released, their pages go back at once, though another block of the
// arena is still in use; without one they come from the kernel as before (the cut stays).
TEST(HostPool, HugePageArraysComeFromTheArenaAndGiveTheirPagesBack) {
  MemoryTracker t;
  Buffer<float> keep_arena(t, MemCategory::Activations, 1024);  // the arena stays in use throughout
  const std::size_t n = 400000;                                // 1.6 MB, a split rank's array
  const long before = resident_kb();
  {
    const std::size_t cut = host_pool_cut();
    std::vector<Buffer<float>> arrays;
    {
      MemoryTracker::HugePageArrays huge;
      for (int i = 0; i < 16; ++i) arrays.emplace_back(t, MemCategory::Optimizer, n);
    }
    EXPECT_GE(host_pool_cut() - cut, 16 * n * sizeof(float));
    bool zero = true;
    for (auto& a : arrays) {
      zero &= all_zero(a.data(), n);
      std::fill(a.begin(), a.end(), 2.f);
    }
    EXPECT_TRUE(zero);
    EXPECT_GT(resident_kb() - before, 20 * 1024);  // 25.6 MB written
    EXPECT_EQ(t.current(MemCategory::Optimizer), (std::int64_t)(16 * n * sizeof(float)));
  }
  EXPECT_LT(resident_kb() - before, 6 * 1024);  // given back, the arena still in use
  {
    MemoryTracker::HugePageArrays huge;
    const std::size_t cut = host_pool_cut();
    Buffer<float> again(t, MemCategory::Optimizer, n);  // one of the blocks written with 2.f
    EXPECT_EQ(host_pool_cut(), cut);
    EXPECT_TRUE(all_zero(again.data(), n));
  }
  {
    const std::size_t cut = host_pool_cut();
    Buffer<float> plain(t, MemCategory::Optimizer, 3 * n);  // no HugePageArrays: from the kernel
    EXPECT_EQ(host_pool_cut(), cut);
    EXPECT_TRUE(all_zero(plain.data(), 3 * n));
  }
}
#endif

}  // namespace
}  // namespace onegpu::trainer
