// Causal attention of one (sequence, head). Heads of 16 with S a multiple of 16 (every preset)
// take a blocked path; other shapes the plain one. Both compute every output element with the
// same operations in the same order (the plain path's, below), so the path taken never changes
// a bit: the blocked one only runs several rows' (or columns') independent chains at once, where
// the plain one waits on one chain's latency at a time.
#include "trainer/ops/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "trainer/ops/clones.h"
#include "trainer/ops/fast_math.h"

namespace onegpu::trainer {
namespace {

// ---- the plain path: one row at a time ----

// out[j] = sum over d = 0..dh-1, in that order, of c[d] * rows[d * S + j] (one fused multiply-add
// per d), for j < n, 16 lanes at a time held in a register. The lanes of the last group past n
// are computed too: S must be a multiple of 16 so that they stay inside rows and out.
ONEGPU_INLINE void columns_dot16(const float* c, const float* rows, int S, int dh, int n, float* out) {
  for (int j0 = 0; j0 < n; j0 += 16) {
    v16 acc{};
    for (int d = 0; d < dh; ++d) {
      v16 r;
      std::memcpy(&r, rows + (std::size_t)d * S + j0, sizeof r);
      acc += c[d] * r;
    }
    std::memcpy(out + j0, &acc, sizeof acc);
  }
}

// One (sequence, head) of causal attention. kt: scratch [dh, S].
ONEGPU_CLONES
void attention_forward_one(const float* base, long row, int D, int h, int S, int dh, float scale, float* P,
                           float* out_rows, float* kt) {
  // K of this head transposed to [dh, S] so the scores of row i vectorise over j.
  for (int j = 0; j < S; ++j)
    for (int d = 0; d < dh; ++d) kt[(std::size_t)d * S + j] = base[j * row + D + h * dh + d];
  for (int i = 0; i < S; ++i) {
    const float* q = base + i * row + h * dh;
    float* p = P + (long)i * S;
    if (S % 16 == 0 && dh <= 64) {  // the same operations per score, kept in registers
      float qs[64];
      for (int d = 0; d < dh; ++d) qs[d] = q[d] * scale;
      columns_dot16(qs, kt, S, dh, i + 1, p);
    } else {
      for (int j = 0; j <= i; ++j) p[j] = 0.f;
      for (int d = 0; d < dh; ++d) {
        const float qd = q[d] * scale;
        const float* kd = kt + (std::size_t)d * S;
        for (int j = 0; j <= i; ++j) p[j] += qd * kd[j];
      }
    }
    float mx = -INFINITY;
    for (int j = 0; j <= i; ++j) mx = std::max(mx, p[j]);
    for_each16(p, p, i + 1, [mx](v16 x) ONEGPU_INLINE_LAMBDA { return fast_exp(x - mx); });
    float sum = 0.f;
    for (int j = 0; j <= i; ++j) sum += p[j];
    float inv = 1.f / sum;
    for (int j = 0; j <= i; ++j) p[j] *= inv;
    for (int j = i + 1; j < S; ++j) p[j] = 0.f;
    float* o = out_rows + (long)i * D + h * dh;
    if (dh == 16) {
      v16 acc{};
      for (int j = 0; j <= i; ++j) {
        v16 v;
        std::memcpy(&v, base + j * row + 2 * D + h * dh, sizeof v);
        acc += p[j] * v;
      }
      std::memcpy(o, &acc, sizeof acc);
    } else {
      for (int d = 0; d < dh; ++d) o[d] = 0.f;
      for (int j = 0; j <= i; ++j) {
        const float* v = base + j * row + 2 * D + h * dh;
        for (int d = 0; d < dh; ++d) o[d] += p[j] * v[d];
      }
    }
  }
}

// Backward of one (sequence, head). vt: scratch [dh, S]; dp: scratch [S].
ONEGPU_CLONES
void attention_backward_one(const float* base, float* dbase, long row, int D, int h, int S, int dh, float scale,
                            const float* P, const float* dout_rows, float* vt, float* dp) {
  for (int i = 0; i < S; ++i)
    for (int part = 0; part < 3; ++part)
      std::fill(dbase + i * row + part * D + h * dh, dbase + i * row + part * D + h * dh + dh, 0.f);
  // V transposed to [dh, S] so dP = dout V^T vectorises over j.
  for (int j = 0; j < S; ++j)
    for (int d = 0; d < dh; ++d) vt[(std::size_t)d * S + j] = base[j * row + 2 * D + h * dh + d];
  for (int i = 0; i < S; ++i) {
    const float* p = P + (long)i * S;
    const float* go = dout_rows + (long)i * D + h * dh;
    if (S % 16 == 0) {
      columns_dot16(go, vt, S, dh, i + 1, dp);
    } else {
      for (int j = 0; j <= i; ++j) dp[j] = 0.f;
      for (int d = 0; d < dh; ++d) {
        const float g = go[d];
        const float* vd = vt + (std::size_t)d * S;
        for (int j = 0; j <= i; ++j) dp[j] += g * vd[j];
      }
    }
    float dot = 0.f;
    for (int j = 0; j <= i; ++j) dot += dp[j] * p[j];
    const float* q = base + i * row + h * dh;
    float* dq = dbase + i * row + h * dh;
    if (dh == 16) {
      v16 gov, qv, dqv;
      std::memcpy(&gov, go, sizeof gov);
      std::memcpy(&qv, q, sizeof qv);
      std::memcpy(&dqv, dq, sizeof dqv);
      for (int j = 0; j <= i; ++j) {
        float* dv = dbase + j * row + 2 * D + h * dh;
        float* dk = dbase + j * row + D + h * dh;
        v16 dvv, dkv, kv;
        std::memcpy(&dvv, dv, sizeof dvv);
        dvv += p[j] * gov;
        std::memcpy(dv, &dvv, sizeof dvv);
        float ds = p[j] * (dp[j] - dot) * scale;
        std::memcpy(&kv, base + j * row + D + h * dh, sizeof kv);
        dqv += ds * kv;
        std::memcpy(&dkv, dk, sizeof dkv);
        dkv += ds * qv;
        std::memcpy(dk, &dkv, sizeof dkv);
      }
      std::memcpy(dq, &dqv, sizeof dqv);
    } else {
      for (int j = 0; j <= i; ++j) {
        float* dv = dbase + j * row + 2 * D + h * dh;
        for (int d = 0; d < dh; ++d) dv[d] += p[j] * go[d];
      }
      for (int j = 0; j <= i; ++j) {
        float ds = p[j] * (dp[j] - dot) * scale;
        const float* k = base + j * row + D + h * dh;
        float* dk = dbase + j * row + D + h * dh;
        for (int d = 0; d < dh; ++d) {
          dq[d] += ds * k[d];
          dk[d] += ds * q[d];
        }
      }
    }
  }
}


// ---- the blocked path: dh == 16, S a multiple of 16 ----
// The plain path's sums, regrouped: scores and dP for 4 rows at once (4 x up to 4 vectors of
// accumulators), P.V and dS.K for 8 rows at once, dV and dK for 8 columns at once. Each element's
// chain (its terms, their order, the starting zero) is the plain path's.

constexpr int kHd = 16;  // head width of this path: one vector

ONEGPU_INLINE v16 load16(const float* p) {
  v16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
ONEGPU_INLINE void store16(float* p, v16 v) { std::memcpy(p, &v, sizeof v); }

// out[r * S + j] = sum over d = 0..15, in order, of c[r][d] * xt[d * S + j] for rows r < 4 and
// j in key groups [g0, g0 + NG) of 16 (columns_dot16's sums).
template <int NG>
ONEGPU_INLINE void dot4(const float (*c)[kHd], const float* xt, int S, int g0, float* out) {
  v16 acc[4][NG];
  for (int r = 0; r < 4; ++r)
    for (int g = 0; g < NG; ++g) acc[r][g] = v16{};
  for (int d = 0; d < kHd; ++d) {
    v16 x[NG];
    for (int g = 0; g < NG; ++g) x[g] = load16(xt + (std::size_t)d * S + (g0 + g) * 16);
    for (int r = 0; r < 4; ++r) {
      const float cr = c[r][d];
      for (int g = 0; g < NG; ++g) acc[r][g] += cr * x[g];
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int g = 0; g < NG; ++g) store16(out + (std::size_t)r * S + (g0 + g) * 16, acc[r][g]);
}

// dot4 over key groups [0, groups).
ONEGPU_INLINE void dot4_groups(const float (*c)[kHd], const float* xt, int S, int groups, float* out) {
  for (int g0 = 0; g0 < groups; g0 += 4) switch (std::min(4, groups - g0)) {
      case 4: dot4<4>(c, xt, S, g0, out); break;
      case 3: dot4<3>(c, xt, S, g0, out); break;
      case 2: dot4<2>(c, xt, S, g0, out); break;
      default: dot4<1>(c, xt, S, g0, out); break;
    }
}

// out_i = sum over j = 0..i, in order, of W[i][j] * x_j for rows i = i0..i0+7, where x_j is the
// 16 floats at xs + j * xstride and out_i those at out + i * ostride.
ONEGPU_INLINE void rows8(const float* W, int S, const float* xs, long xstride, int i0, float* out, long ostride) {
  v16 acc[8];
  for (int r = 0; r < 8; ++r) acc[r] = v16{};
  const float* w = W + (std::size_t)i0 * S;
  for (int j = 0; j <= i0; ++j) {
    const v16 x = load16(xs + j * xstride);
    for (int r = 0; r < 8; ++r) acc[r] += w[(std::size_t)r * S + j] * x;
  }
  for (int j = i0 + 1; j < i0 + 8; ++j) {  // the diagonal's triangle: row i0 + r stops at j = i0 + r
    const v16 x = load16(xs + j * xstride);
    for (int r = j - i0; r < 8; ++r) acc[r] += w[(std::size_t)r * S + j] * x;
  }
  for (int r = 0; r < 8; ++r) store16(out + (i0 + r) * ostride, acc[r]);
}

// For columns j = j0..j0+7: dv_j = sum over i = j..S-1, in order, of P[i][j] * go_i, and dk_j
// the same of DS[i][j] * q_i (go_i, q_i: 16 floats at go + i * gstride, q + i * qstride).
ONEGPU_INLINE void columns8(const float* P, const float* DS, int S, const float* go, long gstride, const float* q,
                            long qstride, int j0, float* dv, float* dk, long ostride) {
  v16 av[8], ak[8];
  for (int r = 0; r < 8; ++r) av[r] = ak[r] = v16{};
  for (int i = j0; i < S; ++i) {
    const v16 g = load16(go + i * gstride), x = load16(q + i * qstride);
    const float* p = P + (std::size_t)i * S + j0;
    const float* ds = DS + (std::size_t)i * S + j0;
    if (i >= j0 + 7) {
      for (int r = 0; r < 8; ++r) {
        av[r] += p[r] * g;
        ak[r] += ds[r] * x;
      }
    } else {  // the diagonal's triangle: column j0 + r starts at row j0 + r
      for (int r = 0; r <= i - j0; ++r) {
        av[r] += p[r] * g;
        ak[r] += ds[r] * x;
      }
    }
  }
  for (int r = 0; r < 8; ++r) {
    store16(dv + (j0 + r) * ostride, av[r]);
    store16(dk + (j0 + r) * ostride, ak[r]);
  }
}

// t[d * S + j] = the 16 floats at src + j * stride, for j < S.
ONEGPU_INLINE void transpose16(const float* src, long stride, int S, float* t) {
  for (int j = 0; j < S; ++j)
    for (int d = 0; d < kHd; ++d) t[(std::size_t)d * S + j] = src[j * stride + d];
}

// The plain forward's softmax of rows i0..i0+3 of P, which hold their scores for j <= i in key
// groups [0, i0 / 16 + 1) of 16. Exponentials and the scaling run on whole groups, lanes past i
// too (one lane's result does not depend on the others'); those lanes are zeroed at the end.
ONEGPU_INLINE void softmax4(float* P, int S, int i0) {
  const int groups = i0 / 16 + 1, j_last = (groups - 1) * 16;
  const i16v lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  for (int r = 0; r < 4; ++r) {
    const int i = i0 + r;
    float* p = P + (std::size_t)i * S;
    // The largest score (a set's max does not depend on the order taken; NaNs are passed over,
    // as std::max from -inf passes them over).
    v16 m = v16{} - INFINITY;
    for (int j = 0; j < j_last; j += 16) {
      const v16 x = load16(p + j);
      m = x > m ? x : m;
    }
    v16 x = load16(p + j_last);
    x = lane <= i - j_last ? x : v16{} - INFINITY;
    m = x > m ? x : m;
    float h[16];
    std::memcpy(h, &m, sizeof h);
    for (int w = 8; w > 0; w /= 2)
      for (int l = 0; l < w; ++l) h[l] = std::max(h[l], h[l + w]);
    const float mx = h[0];
    for (int j = 0; j < groups * 16; j += 16) store16(p + j, fast_exp(load16(p + j) - mx));
  }
  // Each row's sum in j order; the four chains interleaved.
  float* p0 = P + (std::size_t)i0 * S;
  float sum[4] = {0.f, 0.f, 0.f, 0.f};
  for (int j = 0; j <= i0; ++j)
    for (int r = 0; r < 4; ++r) sum[r] += p0[(std::size_t)r * S + j];
  for (int j = i0 + 1; j < i0 + 4; ++j)
    for (int r = j - i0; r < 4; ++r) sum[r] += p0[(std::size_t)r * S + j];
  for (int r = 0; r < 4; ++r) {
    float* p = p0 + (std::size_t)r * S;
    const float inv = 1.f / sum[r];
    for (int j = 0; j < j_last; j += 16) store16(p + j, load16(p + j) * inv);
    const v16 x = load16(p + j_last) * inv;
    store16(p + j_last, lane <= i0 + r - j_last ? x : v16{});
    for (int j = j_last + 16; j < S; j += 16) store16(p + j, v16{});
  }
}

ONEGPU_CLONES
void attention_forward16(const float* base, long row, int D, int h, int S, float scale, float* P, float* out_rows,
                         float* kt) {
  transpose16(base + D + h * kHd, row, S, kt);
  for (int i0 = 0; i0 < S; i0 += 4) {
    float qs[4][kHd];
    for (int r = 0; r < 4; ++r)
      for (int d = 0; d < kHd; ++d) qs[r][d] = base[(i0 + r) * row + h * kHd + d] * scale;
    dot4_groups(qs, kt, S, i0 / 16 + 1, P + (std::size_t)i0 * S);
    softmax4(P, S, i0);
  }
  for (int i0 = 0; i0 < S; i0 += 8)
    rows8(P, S, base + 2 * D + h * kHd, row, i0, out_rows + h * kHd, D);
}

// scratch: 16 S + 4 S + S * S floats.
ONEGPU_CLONES
void attention_backward16(const float* base, float* dbase, long row, int D, int h, int S, float scale,
                          const float* P, const float* dout_rows, float* scratch) {
  float* vt = scratch;
  float* dp = vt + (std::size_t)kHd * S;  // dP of four rows
  float* DS = dp + (std::size_t)4 * S;    // dS = P (dP - rowsum(dP P)) scale, for j <= i
  transpose16(base + 2 * D + h * kHd, row, S, vt);
  for (int i0 = 0; i0 < S; i0 += 4) {
    float go[4][kHd];
    for (int r = 0; r < 4; ++r) std::memcpy(go[r], dout_rows + (i0 + r) * D + h * kHd, sizeof go[r]);
    dot4_groups(go, vt, S, i0 / 16 + 1, dp);
    const float* p0 = P + (std::size_t)i0 * S;
    float dot[4];
    for (int r = 0; r < 4; ++r) {
      // Written as the plain path writes it, so the compiler makes the same code of it: it
      // vectorises the products of the first 16 or 8 terms, unfused, and fuses the rest.
      const float* p = p0 + (std::size_t)r * S;
      const float* dpr = dp + (std::size_t)r * S;
      float d = 0.f;
      for (int j = 0; j <= i0 + r; ++j) d += dpr[j] * p[j];
      dot[r] = d;
    }
    for (int r = 0; r < 4; ++r) {
      const float* p = p0 + (std::size_t)r * S;
      const float* dpr = dp + (std::size_t)r * S;
      float* ds = DS + (std::size_t)(i0 + r) * S;
      for (int j = 0; j <= i0 + r; ++j) ds[j] = p[j] * (dpr[j] - dot[r]) * scale;
    }
  }
  for (int i0 = 0; i0 < S; i0 += 8)  // dq_i = sum over j <= i of dS[i][j] k_j
    rows8(DS, S, base + D + h * kHd, row, i0, dbase + h * kHd, row);
  for (int j0 = 0; j0 < S; j0 += 8)
    columns8(P, DS, S, dout_rows + h * kHd, D, base + h * kHd, row, j0, dbase + 2 * D + h * kHd,
             dbase + D + h * kHd, row);
}

}  // namespace

void attention_head_forward(const float* base, long row, int D, int h, int S, int dh, float scale, float* P,
                            float* out_rows) {
  thread_local std::vector<float> scratch;
  const std::size_t need = (std::size_t)dh * S;
  if (scratch.size() < need) scratch.resize(need);
  if (dh == kHd && S % 16 == 0)
    attention_forward16(base, row, D, h, S, scale, P, out_rows, scratch.data());
  else
    attention_forward_one(base, row, D, h, S, dh, scale, P, out_rows, scratch.data());
}

void attention_head_backward(const float* base, float* dbase, long row, int D, int h, int S, int dh, float scale,
                             const float* P, const float* dout_rows) {
  thread_local std::vector<float> scratch;
  const std::size_t need = (std::size_t)(dh + 5) * S + (std::size_t)S * S;
  if (scratch.size() < need) scratch.resize(need);
  if (dh == kHd && S % 16 == 0)
    attention_backward16(base, dbase, row, D, h, S, scale, P, dout_rows, scratch.data());
  else
    attention_backward_one(base, dbase, row, D, h, S, dh, scale, P, dout_rows, scratch.data(),
                           scratch.data() + (std::size_t)dh * S);
}

}  // namespace onegpu::trainer
