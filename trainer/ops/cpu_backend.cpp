#include "trainer/ops/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "trainer/error.h"
#include "trainer/ops/clones.h"
#include "trainer/ops/cpu_attention.h"
#include "trainer/ops/fast_math.h"

namespace onegpu::trainer {

namespace {
// True on a thread while it runs a parallel_tasks task: ops then stay on that thread (the pool
// is not reentrant) and use their own scratch.
thread_local bool t_in_task = false;
}  // namespace

void CpuBackend::parallel_tasks(int n, const std::function<void(int)>& fn) {
  if (!pool_ || t_in_task || n <= 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  pool_->parallel_for(n, [&](int i) {
    t_in_task = true;
    fn(i);
    t_in_task = false;
  });
}

CpuBackend::CpuBackend(MemoryTracker& tracker, int threads) : tracker_(tracker) {
  if (threads < 1) throw Error("thread count must be at least 1");
  if (threads > 1) pool_ = std::make_unique<ThreadPool>(threads);
}

float* CpuBackend::scratch(std::size_t n) {
  if (scratch_.size() < n) scratch_ = Buffer<float>(tracker_, MemCategory::Activations, n, false);
  return scratch_.data();
}

// Splits [0, n) into equal chunks of at least min_per_chunk items (a multiple of the matmul row
// tile, so tiles never straddle chunks) and runs fn(begin, end) on each.
void CpuBackend::for_chunks(int n, int min_per_chunk, const std::function<void(int, int)>& fn) {
  int threads = pool_ && !t_in_task ? pool_->threads() : 1;
  int chunks = std::max(1, std::min(threads, n / std::max(1, min_per_chunk)));
  if (chunks == 1) {
    fn(0, n);
    return;
  }
  int per = (n + chunks - 1) / chunks;
  per = (per + kMatmulRowTile - 1) / kMatmulRowTile * kMatmulRowTile;
  pool_->parallel_for(chunks, [&](int c) {
    int b = c * per, e = std::min(n, b + per);
    if (b < e) fn(b, e);
  });
}

namespace {
// One step of a 16 x 16 register transpose: rows lo (bit b of the row index 0) and hi (bit b
// set) trade the halves of their 2^b-column blocks, which swaps bit b of the row index with bit b
// of the column index. Four steps (b = 0..3) transpose the whole block.
#if defined(__clang__)
// clang (the fuzz build) has no __builtin_shuffle; __builtin_shufflevector takes the same
// two-source lane indices as a list of constants.
template <int s, std::size_t... I>
ONEGPU_INLINE v16 low_halves(v16 lo, v16 hi, std::index_sequence<I...>) {
  return __builtin_shufflevector(lo, hi, ((I & s) ? 16 + I - s : I)...);
}
template <int s, std::size_t... I>
ONEGPU_INLINE v16 high_halves(v16 lo, v16 hi, std::index_sequence<I...>) {
  return __builtin_shufflevector(lo, hi, ((I & s) ? 16 + I : I + s)...);
}
#endif

template <int b>
ONEGPU_INLINE void swap_bit(v16& lo, v16& hi) {
  constexpr int s = 1 << b;
#if defined(__clang__)
  const v16 a = low_halves<s>(lo, hi, std::make_index_sequence<16>{});
  const v16 c = high_halves<s>(lo, hi, std::make_index_sequence<16>{});
#else
  constexpr i16v m0 = {0 & s ? 16 + 0 - s : 0,    1 & s ? 16 + 1 - s : 1,    2 & s ? 16 + 2 - s : 2,
                       3 & s ? 16 + 3 - s : 3,    4 & s ? 16 + 4 - s : 4,    5 & s ? 16 + 5 - s : 5,
                       6 & s ? 16 + 6 - s : 6,    7 & s ? 16 + 7 - s : 7,    8 & s ? 16 + 8 - s : 8,
                       9 & s ? 16 + 9 - s : 9,    10 & s ? 16 + 10 - s : 10, 11 & s ? 16 + 11 - s : 11,
                       12 & s ? 16 + 12 - s : 12, 13 & s ? 16 + 13 - s : 13, 14 & s ? 16 + 14 - s : 14,
                       15 & s ? 16 + 15 - s : 15};
  constexpr i16v m1 = {0 & s ? 16 + 0 : 0 + s,    1 & s ? 16 + 1 : 1 + s,    2 & s ? 16 + 2 : 2 + s,
                       3 & s ? 16 + 3 : 3 + s,    4 & s ? 16 + 4 : 4 + s,    5 & s ? 16 + 5 : 5 + s,
                       6 & s ? 16 + 6 : 6 + s,    7 & s ? 16 + 7 : 7 + s,    8 & s ? 16 + 8 : 8 + s,
                       9 & s ? 16 + 9 : 9 + s,    10 & s ? 16 + 10 : 10 + s, 11 & s ? 16 + 11 : 11 + s,
                       12 & s ? 16 + 12 : 12 + s, 13 & s ? 16 + 13 : 13 + s, 14 & s ? 16 + 14 : 14 + s,
                       15 & s ? 16 + 15 : 15 + s};
  const v16 a = __builtin_shuffle(lo, hi, m0), c = __builtin_shuffle(lo, hi, m1);
#endif
  lo = a;
  hi = c;
}
template <int b>
ONEGPU_INLINE void swap_bit_all(v16* r) {
  for (int i = 0; i < 16; ++i)
    if (!(i & (1 << b))) swap_bit<b>(r[i], r[i | (1 << b)]);
}

// t[k, n] = b[n, k] for b of shape [N, K]. Full 16 x 16 blocks go through registers (16 loads,
// 64 two-source shuffles, 16 stores); edges element by element.
ONEGPU_CLONES
void transpose(const float* __restrict b, float* __restrict t, int N, int K) {
  for (int n0 = 0; n0 < N; n0 += 16)
    for (int k0 = 0; k0 < K; k0 += 16) {
      const int nn = std::min(16, N - n0), kk = std::min(16, K - k0);
      if (nn == 16 && kk == 16) {
        v16 r[16];
        for (int i = 0; i < 16; ++i) std::memcpy(&r[i], b + (long)(n0 + i) * K + k0, sizeof(v16));
        swap_bit_all<0>(r);
        swap_bit_all<1>(r);
        swap_bit_all<2>(r);
        swap_bit_all<3>(r);
        for (int k = 0; k < 16; ++k) std::memcpy(t + (long)(k0 + k) * N + n0, &r[k], sizeof(v16));
      } else {
        for (int n = n0; n < n0 + nn; ++n)
          for (int k = k0; k < k0 + kk; ++k) t[(long)k * N + n] = b[(long)n * K + k];
      }
    }
}
}  // namespace

void transpose_matrix(const float* b, float* t, int N, int K) { transpose(b, t, N, K); }

void CpuBackend::matmul(const float* A, const float* B, float* C, int M, int K, int N, bool transA,
                        bool transB, bool accumulate) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate) std::fill(C, C + (long)M * N, 0.f);
    return;
  }
  if (transA && transB) throw Error("matmul: transA and transB together are not supported");
  const float* b = B;
  Buffer<float> own;  // inside a task the shared scratch is off limits
  if (transB) {  // B is [N, K]: lay it out as [K, N] so the kernel reads rows contiguously
    float* t;
    if (t_in_task) {
      own = Buffer<float>(tracker_, MemCategory::Activations, (std::size_t)K * N, false);
      t = own.data();
    } else {
      t = scratch((std::size_t)K * N);
    }
    // The scratch is taken even when the transpose is known: its bytes are in the memory figures.
    const float* known = transposes_ ? transposes_->transposed(B, N, K) : nullptr;
    if (known) {
      b = known;
    } else {
      transpose(B, t, N, K);
      b = t;
    }
  }
  long a_rs = transA ? 1 : K, a_ks = transA ? M : 1;
  // Work per row is K*N; ask for chunks of at least ~32k multiply-adds.
  int min_rows = std::max(4, (int)(32768 / std::max<long>(1, (long)K * N)));
  for_chunks(M, min_rows, [&](int m0, int m1) { matmul_rows(A, a_rs, a_ks, b, C, m0, m1, K, N, accumulate); });
}

void CpuBackend::rmsnorm_forward(const float* x, const float* g, float* y, float* rstd, int T,
                                 int D, float eps) {
  // Each row's sum of squares in d order; four rows' chains side by side (one waits on its
  // add's latency at every d).
  int t = 0;
  for (; t + 4 <= T; t += 4) {
    const float* x0 = x + (long)t * D;
    float ss[4] = {0.f, 0.f, 0.f, 0.f};
    for (int d = 0; d < D; ++d)
      for (int k = 0; k < 4; ++k) ss[k] += x0[(long)k * D + d] * x0[(long)k * D + d];
    for (int k = 0; k < 4; ++k) rstd[t + k] = 1.f / std::sqrt(ss[k] / D + eps);
  }
  for (; t < T; ++t) {
    const float* xr = x + (long)t * D;
    float ss = 0.f;
    for (int d = 0; d < D; ++d) ss += xr[d] * xr[d];
    rstd[t] = 1.f / std::sqrt(ss / D + eps);
  }
  for (t = 0; t < T; ++t) {
    const float* xr = x + (long)t * D;
    const float r = rstd[t];
    float* yr = y + (long)t * D;
    for (int d = 0; d < D; ++d) yr[d] = xr[d] * r * g[d];
  }
}

void CpuBackend::rmsnorm_backward(const float* x, const float* g, const float* rstd,
                                  const float* dy, float* dx, float* dg, int T, int D) {
  if (!dx) {  // the gain's gradient alone: the very sums the loop below adds, in t order
    if (!dg) return;
    for (int t = 0; t < T; ++t) {
      const float* xr = x + (long)t * D;
      const float* dyr = dy + (long)t * D;
      const float r = rstd[t];
      for (int d = 0; d < D; ++d) dg[d] += dyr[d] * xr[d] * r;
    }
    return;
  }
  // Rows four at a time: their sums dot = sum_d dy*g*x (each in d order) side by side, as one
  // chain alone waits on its add's latency at every d; then the rows one by one, in t order.
  for (int t0 = 0; t0 < T; t0 += 4) {
    const int n = std::min(4, T - t0);
    float dot[4] = {0.f, 0.f, 0.f, 0.f};
    if (n == 4) {
      const float* x0 = x + (long)t0 * D;
      const float* dy0 = dy + (long)t0 * D;
      for (int d = 0; d < D; ++d)
        for (int k = 0; k < 4; ++k) dot[k] += dy0[(long)k * D + d] * g[d] * x0[(long)k * D + d];
    } else {
      for (int k = 0; k < n; ++k)
        for (int d = 0; d < D; ++d) dot[k] += dy[(long)(t0 + k) * D + d] * g[d] * x[(long)(t0 + k) * D + d];
    }
    for (int k = 0; k < n; ++k) {
      const int t = t0 + k;
      const float* xr = x + (long)t * D;
      const float* dyr = dy + (long)t * D;
      float* dxr = dx + (long)t * D;
      float r = rstd[t];
      float c = dot[k] * r * r * r / D;
      if (dg)
        for (int d = 0; d < D; ++d) {
          dxr[d] = dyr[d] * g[d] * r - xr[d] * c;
          dg[d] += dyr[d] * xr[d] * r;
        }
      else
        for (int d = 0; d < D; ++d) dxr[d] = dyr[d] * g[d] * r - xr[d] * c;
    }
  }
}

void CpuBackend::rope(float* qkv, int T, int S, int H, int dh, bool inverse) {
  const int half = dh / 2, D = H * dh;
  // cos, sin per (position, pair), made once per shape and thread (a table costs S * dh / 2
  // pow, cos and sin in double, a few percent of a step when remade at every call).
  thread_local std::vector<float> cs;
  thread_local int cs_S = -1, cs_dh = -1;
  if (cs_S != S || cs_dh != dh) {
    cs.assign((std::size_t)S * half * 2, 0.f);
    for (int pos = 0; pos < S; ++pos)
      for (int i = 0; i < half; ++i) {
        double theta = pos * std::pow(10000.0, -2.0 * i / dh);
        cs[((std::size_t)pos * half + i) * 2] = (float)std::cos(theta);
        cs[((std::size_t)pos * half + i) * 2 + 1] = (float)std::sin(theta);
      }
    cs_S = S;
    cs_dh = dh;
  }
  for (int t = 0; t < T; ++t) {
    const float* tab = cs.data() + (std::size_t)(t % S) * half * 2;
    for (int part = 0; part < 2; ++part) {  // q then k
      float* row = qkv + (long)t * 3 * D + part * D;
      for (int h = 0; h < H; ++h) {
        float* p = row + h * dh;
        for (int i = 0; i < half; ++i) {
          float c = tab[2 * i], s = inverse ? -tab[2 * i + 1] : tab[2 * i + 1];
          float a = p[i], b = p[i + half];
          p[i] = a * c - b * s;
          p[i + half] = a * s + b * c;
        }
      }
    }
  }
}

void CpuBackend::attention_forward(const float* qkv, float* out, float* probs, int B, int S, int H,
                                   int dh) {
  const int D = H * dh;
  const long row = 3L * D;
  const float scale = 1.f / std::sqrt((float)dh);
  auto one = [&](int bh) {
    int b = bh / H, h = bh % H;
    attention_head_forward(qkv + (long)b * S * row, row, D, h, S, dh, scale, probs + (long)bh * S * S,
                           out + (long)b * S * D);
  };
  if (pool_ && !t_in_task && B * H > 1)
    pool_->parallel_for(B * H, one);
  else
    for (int bh = 0; bh < B * H; ++bh) one(bh);
}

void CpuBackend::attention_backward(const float* qkv, const float* probs, const float* dout,
                                    float* dqkv, int B, int S, int H, int dh) {
  const int D = H * dh;
  const long row = 3L * D;
  const float scale = 1.f / std::sqrt((float)dh);
  auto one = [&](int bh) {
    int b = bh / H, h = bh % H;
    attention_head_backward(qkv + (long)b * S * row, dqkv + (long)b * S * row, row, D, h, S, dh, scale,
                            probs + (long)bh * S * S, dout + (long)b * S * D);
  };
  if (pool_ && !t_in_task && B * H > 1)
    pool_->parallel_for(B * H, one);
  else
    for (int bh = 0; bh < B * H; ++bh) one(bh);
}

void CpuBackend::softmax_rows(const float* x, float* y, int T, int N) {
  for (int t = 0; t < T; ++t) {
    const float* xr = x + (long)t * N;
    float* yr = y + (long)t * N;
    float mx = -INFINITY;
    for (int n = 0; n < N; ++n) mx = std::max(mx, xr[n]);
    float sum = 0.f;
    for (int n = 0; n < N; ++n) {
      yr[n] = std::exp(xr[n] - mx);
      sum += yr[n];
    }
    float inv = 1.f / sum;
    for (int n = 0; n < N; ++n) yr[n] *= inv;
  }
}

namespace {
ONEGPU_CLONES
void silu_fwd(const float* __restrict u, float* __restrict a, std::int64_t n) {
  for_each16(u, a, n, [](v16 x) ONEGPU_INLINE_LAMBDA { return x / (1.f + fast_exp(-x)); });
}
ONEGPU_CLONES
void silu_bwd(const float* __restrict u, const float* __restrict da, float* __restrict du, std::int64_t n) {
  for_each16(u, da, du, n, [](v16 x, v16 g) ONEGPU_INLINE_LAMBDA {
    v16 s = 1.f / (1.f + fast_exp(-x));
    return g * s * (1.f + x * (1.f - s));
  });
}
// e[v] = exp(l[v] - mx); returns the sum, accumulated in eight fixed double lanes.
ONEGPU_CLONES
double exp_row(const float* __restrict l, float mx, float* __restrict e, int V) {
  for_each16(l, e, V, [mx](v16 x) ONEGPU_INLINE_LAMBDA { return fast_exp(x - mx); });
  double lane[8] = {};
  int v = 0;
  for (; v + 8 <= V; v += 8)
    for (int j = 0; j < 8; ++j) lane[j] += e[v + j];
  for (; v < V; ++v) lane[0] += e[v];
  double s = 0.0;
  for (double x : lane) s += x;
  return s;
}
// One row of cross-entropy: returns log(sum exp l) - l[y]. e receives exp(l - max); with grad it
// becomes the gradient scale * (softmax - onehot(y)) in place.
ONEGPU_CLONES
double ce_row(const float* __restrict l, float* __restrict e, int V, int y, float scale, bool grad) {
  v16 m16 = v16{} - INFINITY;
  int v = 0;
  for (; v + 16 <= V; v += 16) {
    v16 x;
    std::memcpy(&x, l + v, sizeof x);
    m16 = x > m16 ? x : m16;
  }
  float mx = -INFINITY;
  for (int j = 0; j < 16; ++j) mx = std::max(mx, m16[j]);  // max is exact: lane order is irrelevant
  for (; v < V; ++v) mx = std::max(mx, l[v]);
  const double sum = exp_row(l, mx, e, V);
  if (grad) {
    const float f = (float)(scale / sum);
    for (int i = 0; i < V; ++i) e[i] *= f;
    e[y] -= scale;
  }
  return std::log(sum) + mx - l[y];
}

ONEGPU_CLONES
void widen_bf16(const std::uint16_t* __restrict src, float* __restrict dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t u = (std::uint32_t)src[i] << 16;
    std::memcpy(dst + i, &u, 4);
  }
}
}  // namespace

void CpuBackend::silu_forward(const float* u, float* a, std::int64_t n) { silu_fwd(u, a, n); }

void CpuBackend::silu_backward(const float* u, const float* da, float* du, std::int64_t n) { silu_bwd(u, da, du, n); }

double CpuBackend::cross_entropy(const float* logits, const std::int32_t* targets, float* dlogits,
                                 int T, int V, float scale) {
  for (int t = 0; t < T; ++t)
    if (targets[t] >= V) throw Error("cross_entropy: target outside the vocabulary");
  row_loss_.assign(T, 0.0);
  auto rows = [&](int t0, int t1) {
    std::vector<float> tmp;
    for (int t = t0; t < t1; ++t) {
      float* dl = dlogits ? dlogits + (long)t * V : nullptr;
      if (targets[t] < 0) {
        if (dl) std::fill(dl, dl + V, 0.f);
        continue;
      }
      if (!dl && (int)tmp.size() < V) tmp.resize(V);
      row_loss_[t] = ce_row(logits + (long)t * V, dl ? dl : tmp.data(), V, targets[t], scale, dl != nullptr);
    }
  };
  for_chunks(T, 4, rows);
  double total = 0.0;
  for (int t = 0; t < T; ++t) total += row_loss_[t];  // fixed order
  return total;
}

void CpuBackend::embedding_forward(const float* table, const std::int32_t* tok, float* out, int T,
                                   int D) {
  for (int t = 0; t < T; ++t) std::copy(table + (long)tok[t] * D, table + (long)tok[t] * D + D, out + (long)t * D);
}

void CpuBackend::embedding_backward(const std::int32_t* tok, const float* dout, float* dtable,
                                    int T, int D) {
  for (int t = 0; t < T; ++t) {
    float* r = dtable + (long)tok[t] * D;
    const float* g = dout + (long)t * D;
    for (int d = 0; d < D; ++d) r[d] += g[d];
  }
}

void CpuBackend::gather_rows(const float* src, const std::int32_t* idx, float* dst, int n, int D) {
  for (int i = 0; i < n; ++i) std::copy(src + (long)idx[i] * D, src + (long)idx[i] * D + D, dst + (long)i * D);
}

void CpuBackend::scatter_add_rows(const float* src, const std::int32_t* idx, const float* w,
                                  float* dst, int n, int D) {
  for (int i = 0; i < n; ++i) {
    float* r = dst + (long)idx[i] * D;
    const float* s = src + (long)i * D;
    float wi = w ? w[i] : 1.f;
    for (int d = 0; d < D; ++d) r[d] += wi * s[d];
  }
}

void CpuBackend::add(const float* a, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] += a[i];
}

void CpuBackend::bf16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n) {
  constexpr std::int64_t kBlock = 1 << 14;  // elements per chunk unit: big enough to be worth a thread
  const int blocks = (int)((n + kBlock - 1) / kBlock);
  for_chunks(blocks, 4, [&](int b0, int b1) {
    const std::int64_t i0 = b0 * kBlock, i1 = std::min(n, b1 * kBlock);
    widen_bf16(src + i0, dst + i0, i1 - i0);
  });
}

}  // namespace onegpu::trainer
