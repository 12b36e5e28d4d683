// WeightCache: the fp32 copies of a shard's bf16 weights and their transposes, made once a
// step. Each transpose is found again by its operand (whatever order they were first asked
// in), is made again from the new weights after invalidate(), and operands outside this
// step's copies are left to the matmul (null).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "trainer/parallel/weight_cache.h"

namespace onegpu::trainer {
namespace {

TEST(WeightCache, TransposesAreFoundByOperandAndMadeAgainEachStep) {
  constexpr int N = 3, K = 5, kMatrices = 6;
  const std::int64_t n = (std::int64_t)N * K * kMatrices;
  std::vector<bf16> w((std::size_t)n);
  for (std::int64_t i = 0; i < n; ++i) w[(std::size_t)i] = float_to_bf16((float)i);
  WeightCache cache;
  const float* wide = cache.wide(w.data(), 0, n);
  ASSERT_NE(wide, nullptr);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(wide[i], (float)i);
  EXPECT_EQ(cache.wide(w.data(), 0, n), wide);  // one copy a range

  // Asked in an order that is not the operands' address order.
  const int order[kMatrices] = {3, 0, 5, 1, 4, 2};
  std::vector<const float*> t(kMatrices);
  for (int m : order) t[(std::size_t)m] = cache.transposed(wide + m * N * K, N, K);
  for (int m = 0; m < kMatrices; ++m) {
    const float* b = wide + m * N * K;
    ASSERT_NE(t[(std::size_t)m], nullptr);
    EXPECT_EQ(cache.transposed(b, N, K), t[(std::size_t)m]) << m;  // found, not made again
    for (int r = 0; r < N; ++r)
      for (int c = 0; c < K; ++c) ASSERT_EQ(t[(std::size_t)m][c * N + r], b[r * K + c]) << m;
  }
  std::vector<float> outside((std::size_t)N * K, 1.f);
  EXPECT_EQ(cache.transposed(outside.data(), N, K), nullptr);

  // The next step: new weights, the copies and transposes made again from them.
  cache.invalidate();
  for (std::int64_t i = 0; i < n; ++i) w[(std::size_t)i] = float_to_bf16((float)(2 * i));
  EXPECT_EQ(cache.transposed(wide + 2 * N * K, N, K), nullptr);  // no copy of this step yet
  wide = cache.wide(w.data(), 0, n);
  const float* t2 = cache.transposed(wide + 2 * N * K, N, K);
  ASSERT_NE(t2, nullptr);
  EXPECT_EQ(t2[0], (float)(2 * 2 * N * K));
  EXPECT_EQ(t2[1], (float)(2 * (2 * N * K + K)));  // row 1 of the operand, column 0
  EXPECT_GT(cache.bytes(), 0u);
}

}  // namespace
}  // namespace onegpu::trainer
