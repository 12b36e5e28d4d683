// Register-tiled matmul kernel. Each C element is accumulated over k in increasing order in
// every code path (full tiles, column tails, row tails), starting from C (accumulate) or 0, so
// how rows are split among threads never changes a bit of the result.
#include <algorithm>

#include "trainer/ops/cpu_backend.h"

namespace onegpu::trainer {
namespace {

constexpr int kRows = 4;   // rows per register tile
constexpr int kCols = 16;  // columns per register tile

// The clones let the loader pick AVX2/AVX-512 code where the CPU has it while the binary still
// runs on any x86-64. No FMA contraction is requested, so all clones round alike.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONEGPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ONEGPU_CLONES
#endif

ONEGPU_CLONES
void tile_full(const float* A, long a_rs, long a_ks, const float* B, float* C, int m, int n0,
               int K, int N, bool acc) {
  float c[kRows][kCols];
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kCols; ++j) c[r][j] = acc ? C[(long)(m + r) * N + n0 + j] : 0.f;
  const float* a0 = A + (long)m * a_rs;
  for (int k = 0; k < K; ++k) {
    const float* b = B + (long)k * N + n0;
    float av[kRows];
    for (int r = 0; r < kRows; ++r) av[r] = a0[r * a_rs + (long)k * a_ks];
    for (int r = 0; r < kRows; ++r)
      for (int j = 0; j < kCols; ++j) c[r][j] += av[r] * b[j];
  }
  for (int r = 0; r < kRows; ++r)
    for (int j = 0; j < kCols; ++j) C[(long)(m + r) * N + n0 + j] = c[r][j];
}

// Any tile shape up to kRows x kCols (tails).
ONEGPU_CLONES
void tile_any(const float* A, long a_rs, long a_ks, const float* B, float* C, int m, int rows,
              int n0, int cols, int K, int N, bool acc) {
  float c[kRows][kCols];
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) c[r][j] = acc ? C[(long)(m + r) * N + n0 + j] : 0.f;
  for (int k = 0; k < K; ++k) {
    const float* b = B + (long)k * N + n0;
    for (int r = 0; r < rows; ++r) {
      float av = A[(long)(m + r) * a_rs + (long)k * a_ks];
      for (int j = 0; j < cols; ++j) c[r][j] += av * b[j];
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) C[(long)(m + r) * N + n0 + j] = c[r][j];
}

}  // namespace

void matmul_rows(const float* A, long a_rs, long a_ks, const float* B, float* C, int m0, int m1,
                 int K, int N, bool accumulate) {
  for (int n0 = 0; n0 < N; n0 += kCols) {
    int cols = std::min(kCols, N - n0);
    for (int m = m0; m < m1; m += kRows) {
      int rows = std::min(kRows, m1 - m);
      if (rows == kRows && cols == kCols)
        tile_full(A, a_rs, a_ks, B, C, m, n0, K, N, accumulate);
      else
        tile_any(A, a_rs, a_ks, B, C, m, rows, n0, cols, K, N, accumulate);
    }
  }
}

}  // namespace onegpu::trainer
