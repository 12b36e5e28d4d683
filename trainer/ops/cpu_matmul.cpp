// Register-tiled matmul kernel. Each C element is accumulated over k in increasing order,
// starting from C (accumulate) or 0, one fused multiply-add per k. Every code path below (wide
// AVX-512 tiles, 16-column tiles, tails) does exactly that per element, so which path computes
// an element, and how rows are split among threads, never changes a bit of the result.
#include <algorithm>
#include <cstring>

#include "trainer/ops/clones.h"
#include "trainer/ops/cpu_backend.h"

namespace onegpu::trainer {
namespace {

constexpr int kCols = 16;  // columns per register tile: one 16-float vector per row

// A block of R rows (R <= kMatmulRowTile) x 16 columns of C held in vector registers while k runs.
template <int R>
ONEGPU_INLINE void tile_r(const float* A, long a_rs, long a_ks, const float* B, int ldb, float* C, int m, int n0,
                          int K, int N, bool acc) {
  v16 c[R];
  for (int r = 0; r < R; ++r) {
    if (acc)
      std::memcpy(&c[r], C + (long)(m + r) * N + n0, sizeof(v16));
    else
      c[r] = v16{};
  }
  const float* a0 = A + (long)m * a_rs;
  for (int k = 0; k < K; ++k) {
    v16 b;
    std::memcpy(&b, B + (long)k * ldb, sizeof(v16));
    const float* ak = a0 + (long)k * a_ks;
    for (int r = 0; r < R; ++r) c[r] += ak[r * a_rs] * b;
  }
  for (int r = 0; r < R; ++r) std::memcpy(C + (long)(m + r) * N + n0, &c[r], sizeof(v16));
}

// Full-width tiles: the common kMatmulRowTile rows, or the last few rows of a chunk.
ONEGPU_CLONES
void tile_full(const float* A, long a_rs, long a_ks, const float* B, int ldb, float* C, int m, int rows,
               int n0, int K, int N, bool acc) {
  static_assert(kMatmulRowTile == 6, "one case per row count below");
  switch (rows) {
    case 6: tile_r<6>(A, a_rs, a_ks, B, ldb, C, m, n0, K, N, acc); break;
    case 5: tile_r<5>(A, a_rs, a_ks, B, ldb, C, m, n0, K, N, acc); break;
    case 4: tile_r<4>(A, a_rs, a_ks, B, ldb, C, m, n0, K, N, acc); break;
    case 3: tile_r<3>(A, a_rs, a_ks, B, ldb, C, m, n0, K, N, acc); break;
    case 2: tile_r<2>(A, a_rs, a_ks, B, ldb, C, m, n0, K, N, acc); break;
    default: tile_r<1>(A, a_rs, a_ks, B, ldb, C, m, n0, K, N, acc); break;
  }
}

// Any tile shape up to kMatmulRowTile x kCols (column tails, when N is not a multiple of 16).
ONEGPU_CLONES
void tile_any(const float* A, long a_rs, long a_ks, const float* B, int ldb, float* C, int m,
              int rows, int n0, int cols, int K, int N, bool acc) {
  float c[kMatmulRowTile][kCols];
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) c[r][j] = acc ? C[(long)(m + r) * N + n0 + j] : 0.f;
  for (int k = 0; k < K; ++k) {
    const float* b = B + (long)k * ldb;
    for (int r = 0; r < rows; ++r) {
      float av = A[(long)(m + r) * a_rs + (long)k * a_ks];
      for (int j = 0; j < cols; ++j) c[r][j] += av * b[j];
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) C[(long)(m + r) * N + n0 + j] = c[r][j];
}

// ---- wide tiles (AVX-512 only) ----
// R rows x NV*16 columns: with NV = 4 (64 columns, d_model) the 24 accumulators, 4 vectors of
// B and a broadcast fill the 32 vector registers, and each k costs 4 + R loads for 4 R FMAs
// instead of 1 + R loads for R. AVX2 has 16 registers and would spill, so it keeps tile_full.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONEGPU_AVX512 __attribute__((target("arch=x86-64-v4")))
bool have_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  return yes;
}
#else
#define ONEGPU_AVX512
bool have_avx512() { return false; }
#endif

template <int R, int NV>
ONEGPU_AVX512 ONEGPU_INLINE void wide_r(const float* A, long a_rs, long a_ks, const float* B, int ldb, float* C,
                                        int m, int n0, int K, int N, bool acc) {
  v16 c[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) {
      if (acc)
        std::memcpy(&c[r][v], C + (long)(m + r) * N + n0 + 16 * v, sizeof(v16));
      else
        c[r][v] = v16{};
    }
  const float* a0 = A + (long)m * a_rs;
  for (int k = 0; k < K; ++k) {
    v16 b[NV];
    for (int v = 0; v < NV; ++v) std::memcpy(&b[v], B + (long)k * ldb + 16 * v, sizeof(v16));
    const float* ak = a0 + (long)k * a_ks;
    for (int r = 0; r < R; ++r) {
      const float x = ak[r * a_rs];
      for (int v = 0; v < NV; ++v) c[r][v] += x * b[v];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) std::memcpy(C + (long)(m + r) * N + n0 + 16 * v, &c[r][v], sizeof(v16));
}

template <int NV>
ONEGPU_AVX512 __attribute__((noinline)) void wide_rows(const float* A, long a_rs, long a_ks, const float* B, int ldb,
                                                       float* C, int m0, int m1, int n0, int K, int N, bool acc) {
  static_assert(kMatmulRowTile == 6, "one case per row count below");
  for (int m = m0; m < m1; m += kMatmulRowTile) {
    switch (std::min(kMatmulRowTile, m1 - m)) {
      case 6: wide_r<6, NV>(A, a_rs, a_ks, B, ldb, C, m, n0, K, N, acc); break;
      case 5: wide_r<5, NV>(A, a_rs, a_ks, B, ldb, C, m, n0, K, N, acc); break;
      case 4: wide_r<4, NV>(A, a_rs, a_ks, B, ldb, C, m, n0, K, N, acc); break;
      case 3: wide_r<3, NV>(A, a_rs, a_ks, B, ldb, C, m, n0, K, N, acc); break;
      case 2: wide_r<2, NV>(A, a_rs, a_ks, B, ldb, C, m, n0, K, N, acc); break;
      default: wide_r<1, NV>(A, a_rs, a_ks, B, ldb, C, m, n0, K, N, acc); break;
    }
  }
}

}  // namespace

void matmul_rows(const float* A, long a_rs, long a_ks, const float* B, float* C, int m0, int m1,
                 int K, int N, bool accumulate) {
  // A 16-column strip of B is copied to a contiguous K x 16 block first: reading it in place
  // strides by N floats per k, and strides of 4 KiB alias in the cache.
  constexpr int kMaxPackK = 1024;
  alignas(64) float pack[kMaxPackK * kCols];
  const bool packing = K <= kMaxPackK && m1 - m0 >= 2 * kMatmulRowTile && N > kCols;
  int n0 = 0;
  if (have_avx512()) {
    // Strips of 64 (then 32) columns read B in place when its rows are short (N <= 128: one or
    // two strips per row, no 4 KiB aliasing); wider B is packed strip by strip when K allows.
    constexpr int kWidePackFloats = 16384;  // 64 KiB
    alignas(64) static thread_local float wpack[kWidePackFloats];
    for (int nv : {4, 2}) {
      const int w = 16 * nv;
      for (; n0 + w <= N; n0 += w) {
        const float* b = B + n0;
        int ldb = N;
        if (N > 128 && (long)K * w <= kWidePackFloats && m1 - m0 >= 2 * kMatmulRowTile) {
          for (int k = 0; k < K; ++k) std::memcpy(wpack + k * w, B + (long)k * N + n0, sizeof(float) * w);
          b = wpack;
          ldb = w;
        }
        if (nv == 4)
          wide_rows<4>(A, a_rs, a_ks, b, ldb, C, m0, m1, n0, K, N, accumulate);
        else
          wide_rows<2>(A, a_rs, a_ks, b, ldb, C, m0, m1, n0, K, N, accumulate);
      }
    }
  }
  for (; n0 < N; n0 += kCols) {
    int cols = std::min(kCols, N - n0);
    const float* b = B + n0;
    int ldb = N;
    if (packing && cols == kCols) {
      for (int k = 0; k < K; ++k) std::memcpy(pack + k * kCols, B + (long)k * N + n0, sizeof(float) * kCols);
      b = pack;
      ldb = kCols;
    }
    for (int m = m0; m < m1; m += kMatmulRowTile) {
      int rows = std::min(kMatmulRowTile, m1 - m);
      if (cols == kCols)
        tile_full(A, a_rs, a_ks, b, ldb, C, m, rows, n0, K, N, accumulate);
      else
        tile_any(A, a_rs, a_ks, B + n0, N, C, m, rows, n0, cols, K, N, accumulate);
    }
  }
}

}  // namespace onegpu::trainer
