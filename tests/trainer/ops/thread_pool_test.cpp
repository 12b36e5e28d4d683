// The worker pool: every chunk runs exactly once per call, across many back-to-back calls of
// different sizes (the pattern the model produces).
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "trainer/ops/thread_pool.h"

using namespace onegpu::trainer;

TEST(ThreadPool, EveryChunkRunsExactlyOncePerCall) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    std::vector<std::atomic<int>> hits(64);
    long total = 0;
    for (int call = 0; call < 3000; ++call) {
      int n = 1 + call % 37;
      for (int i = 0; i < n; ++i) hits[i].store(0);
      pool.parallel_for(n, [&](int i) { hits[i].fetch_add(1); });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "call " << call << " chunk " << i;
      total += n;
    }
    EXPECT_GT(total, 0);
  }
}
