// The CPU matmul's contract, element by element: C[m,n] starts from C (accumulate) or 0 and
// takes one fused multiply-add per k, k in increasing order. Every kernel path (64- and
// 32-column AVX-512 tiles, 16-column tiles, packed or in-place B, row and column tails) must give
// exactly the reference's bits; that is what keeps results independent of the path and of the
// thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "trainer/memory/tracker.h"
#include "trainer/model/params.h"
#include "trainer/ops/cpu_backend.h"

namespace onegpu::trainer {
namespace {

std::vector<float> randoms(std::size_t n, std::uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = (float)(r.uniform() * 2 - 1);
  return v;
}

// C = op(A) op(B) (+ C) with one std::fma per k, k ascending.
void reference(const float* A, const float* B, float* C, int M, int K, int N, bool ta, bool tb, bool acc) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float c = acc ? C[(long)m * N + n] : 0.f;
      for (int k = 0; k < K; ++k) {
        float a = ta ? A[(long)k * M + m] : A[(long)m * K + k];
        float b = tb ? B[(long)n * K + k] : B[(long)k * N + n];
        c = std::fma(a, b, c);
      }
      C[(long)m * N + n] = c;
    }
}

TEST(CpuMatmul, EveryPathGivesTheBitsOfSequentialFusedMultiplyAdds) {
  if (!__builtin_cpu_supports("fma")) GTEST_SKIP() << "the portable build multiplies and adds separately";
#if defined(__clang__)
  // The sanitizer build (clang) has no per-ISA clones (trainer/ops/clones.h): only the portable
  // build, which multiplies and adds separately.
  GTEST_SKIP() << "a clang build has only the portable matmul, which multiplies and adds separately";
#endif
  MemoryTracker mt;
  CpuBackend one(mt, 1), two(mt, 2);
  struct Shape {
    int M, K, N;
  };
  // d_model 64, expert widths 64 and 128, the router's 16, a vocabulary, odd sizes for tails.
  const Shape shapes[] = {{256, 64, 192}, {256, 64, 64},  {32, 64, 128}, {7, 128, 64}, {256, 64, 16},
                          {24, 64, 1024},  {64, 256, 320},  {13, 33, 97}, {1, 5, 48},  {16, 1024, 64}};
  std::uint64_t seed = 1;
  for (const Shape& s : shapes)
    for (int mode = 0; mode < 6; ++mode) {
      const bool ta = mode == 1 || mode == 4, tb = mode == 2 || mode == 5, acc = mode >= 3;
      auto A = randoms((std::size_t)s.M * s.K, seed++), B = randoms((std::size_t)s.K * s.N, seed++);
      auto C0 = randoms((std::size_t)s.M * s.N, seed++);
      auto want = C0, got1 = C0, got2 = C0;
      reference(A.data(), B.data(), want.data(), s.M, s.K, s.N, ta, tb, acc);
      one.matmul(A.data(), B.data(), got1.data(), s.M, s.K, s.N, ta, tb, acc);
      two.matmul(A.data(), B.data(), got2.data(), s.M, s.K, s.N, ta, tb, acc);
      const std::string what = std::to_string(s.M) + "x" + std::to_string(s.K) + "x" + std::to_string(s.N) +
                               " transA=" + std::to_string(ta) + " transB=" + std::to_string(tb) +
                               " accumulate=" + std::to_string(acc);
      EXPECT_EQ(std::memcmp(want.data(), got1.data(), want.size() * 4), 0) << what << " (1 thread)";
      EXPECT_EQ(std::memcmp(want.data(), got2.data(), want.size() * 4), 0) << what << " (2 threads)";
    }
}

}  // namespace
}  // namespace onegpu::trainer
