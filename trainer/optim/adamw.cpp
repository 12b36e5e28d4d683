#include "trainer/optim/adamw.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

#include "trainer/error.h"
#include "trainer/ops/backend.h"
#include "trainer/ops/clones.h"
#include "trainer/ops/thread_pool.h"

namespace onegpu::trainer {

void AdamWConfig::validate() const {
  if (!(lr > 0.f)) throw Error("optimizer: learning rate must be positive");
  if (warmup_steps < 0) throw Error("optimizer: warmup steps must not be negative");
  if (total_steps <= 0) throw Error("optimizer: total steps must be positive");
  if (!(beta1 >= 0.f && beta1 < 1.f && beta2 >= 0.f && beta2 < 1.f)) throw Error("optimizer: betas must be in [0, 1)");
  if (weight_decay < 0.f) throw Error("optimizer: weight decay must not be negative");
}

float learning_rate(const AdamWConfig& c, int step) {
  if (step < c.warmup_steps) return c.lr * (float)(step + 1) / (float)c.warmup_steps;
  int span = std::max(1, c.total_steps - c.warmup_steps);
  double t = std::min(1.0, (double)(step - c.warmup_steps) / span);
  double cosv = 0.5 * (1.0 + std::cos(3.141592653589793 * t));
  return (float)(c.lr * (c.min_lr_ratio + (1.0 - c.min_lr_ratio) * cosv));
}


namespace {
// Eight fixed lanes, summed in order at the end: vectorisable and the same on every run.
ONEGPU_CLONES
double sum_squares(const float* g, std::int64_t n) {
  double lane[8] = {};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lane[j] += (double)g[i + j] * g[i + j];
  for (; i < n; ++i) lane[0] += (double)g[i] * g[i];
  double s = 0.0;
  for (double v : lane) s += v;
  return s;
}

// sum_squares of four ranges of n floats (n a multiple of 8) at g + k * n, into out[k]: each
// range's lanes take the same steps as there, and the four ranges' chains run side by side
// (one range alone waits on its multiply-add's latency every 8 floats).
ONEGPU_CLONES
void sum_squares4(const float* g, std::int64_t n, double* out) {
  double lane[4][8] = {};
  for (std::int64_t i = 0; i < n; i += 8)
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 8; ++j) lane[k][j] += (double)g[k * n + i + j] * g[k * n + i + j];
  for (int k = 0; k < 4; ++k) {
    double s = 0.0;
    for (double v : lane[k]) s += v;
    out[k] = s;
  }
}

// One pass per element: moments, bias-corrected step with decoupled weight decay, and the bf16
// copy. Vectorises (the trainer builds with -fno-math-errno, so sqrt needs no errno branch).
ONEGPU_CLONES
void adamw_range(float* __restrict w, float* __restrict m, float* __restrict v, const float* __restrict g,
                 bf16* __restrict wb, std::int64_t n, float scale, float b1, float b2, float inv_bc1,
                 float inv_bc2, float lr, float wd, float eps) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * scale;
    const float mi = b1 * m[i] + (1.f - b1) * gi;
    const float vi = b2 * v[i] + (1.f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float den = std::sqrt(vi * inv_bc2) + eps;
    const float wi = w[i] - lr * (mi * inv_bc1 / den + wd * w[i]);
    w[i] = wi;
    // round to nearest even bf16 (weights are finite here: the norm check ran first)
    std::uint32_t u;
    std::memcpy(&u, &wi, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    wb[i] = (bf16)(u >> 16);
  }
}
}  // namespace

constexpr std::int64_t kBlock = 1 << 16;  // elements per block of work

void for_blocks(std::int64_t n, ThreadPool* pool, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  int blocks = (int)((n + kBlock - 1) / kBlock);
  auto run = [&](int i) { fn(i * kBlock, std::min(n, (i + 1) * kBlock)); };
  if (pool)
    pool->parallel_for(blocks, run);
  else
    for (int i = 0; i < blocks; ++i) run(i);
}

void zero_grads(ParamStore& p, ThreadPool* pool) {
  float* g = p.grads.data();
  for_blocks(p.count(), pool, [&](std::int64_t a, std::int64_t b) { std::memset(g + a, 0, sizeof(float) * (b - a)); });
}

double global_grad_norm(const ParamStore& p, ThreadPool* pool) {
  std::vector<double> part((std::size_t)((p.count() + kBlock - 1) / kBlock));
  // Whole blocks four at a time, on any number of threads (the same sums, sooner), then the rest.
  const int groups = (int)(p.count() / (4 * kBlock));
  auto group = [&](int i) { sum_squares4(p.grads.data() + (std::int64_t)i * 4 * kBlock, kBlock, part.data() + 4 * i); };
  if (pool)
    pool->parallel_for(groups, group);
  else
    for (int i = 0; i < groups; ++i) group(i);
  const std::int64_t done = (std::int64_t)groups * 4 * kBlock;
  const std::int64_t rest = p.count() - done;
  for_blocks(rest, pool, [&](std::int64_t a, std::int64_t b) {
    part[(done + a) / kBlock] = sum_squares(p.grads.data() + done + a, b - a);
  });
  double s = 0.0;
  for (double v : part) s += v;
  return std::sqrt(s);
}

double sum_of_squares(const float* g, std::int64_t n) { return sum_squares(g, n); }

UpdateStats adamw_update(ParamStore& p, const AdamWConfig& c, int step, ThreadPool* pool) {
  return adamw_update_with_norm(p, c, step, global_grad_norm(p, pool), pool);
}

namespace {
struct StepScalars {
  UpdateStats st;
  float b1, b2, inv_bc1, inv_bc2;
};
StepScalars step_scalars(const AdamWConfig& c, int step, double grad_norm) {
  StepScalars k;
  k.st.grad_norm = grad_norm;
  if (!std::isfinite(grad_norm)) throw Error("optimizer: gradient norm is not finite (training diverged)");
  k.st.lr = learning_rate(c, step);
  if (c.clip_norm > 0.f && grad_norm > c.clip_norm) k.st.clip_scale = (float)(c.clip_norm / grad_norm);
  k.b1 = c.beta1;
  k.b2 = c.beta2;
  k.inv_bc1 = 1.f / (1.f - (float)std::pow((double)k.b1, step + 1));
  k.inv_bc2 = 1.f / (1.f - (float)std::pow((double)k.b2, step + 1));
  return k;
}
}  // namespace

UpdateStats adamw_update_pieces(ParamStore& p, float* master, float* m, float* v,
                                const std::vector<OptimizerPiece>& pieces, const AdamWConfig& c, int step,
                                double grad_norm) {
  const StepScalars k = step_scalars(c, step, grad_norm);
  // Tensor starts (flat offsets, sorted) and their decay: a piece is cut where a tensor starts.
  std::vector<std::pair<std::int64_t, float>> wd_from;
  for (const auto& t : p.tensors()) wd_from.push_back({t.offset, t.kind == ParamKind::Norm ? 0.f : c.weight_decay});
  for (const OptimizerPiece& pc : pieces) {
    if (pc.n <= 0) continue;
    std::size_t ti = std::upper_bound(wd_from.begin(), wd_from.end(), std::make_pair(pc.flat, 1e30f)) - wd_from.begin() - 1;
    for (std::int64_t i = pc.flat, end_all = pc.flat + pc.n; i < end_all;) {
      const std::int64_t end = ti + 1 < wd_from.size() ? std::min(end_all, wd_from[ti + 1].first) : end_all;
      const std::int64_t s = pc.at + (i - pc.flat);
      adamw_range(master + s, m + s, v + s, p.grads.data() + i, p.weights.data() + i, end - i, k.st.clip_scale, k.b1,
                  k.b2, k.inv_bc1, k.inv_bc2, k.st.lr, wd_from[ti].second, c.eps);
      i = end;
      ++ti;
    }
  }
  return k.st;
}

UpdateStats adamw_update_with_norm(ParamStore& p, const AdamWConfig& c, int step, double grad_norm, ThreadPool* pool) {
  UpdateStats st;
  st.grad_norm = grad_norm;
  if (!std::isfinite(st.grad_norm)) throw Error("optimizer: gradient norm is not finite (training diverged)");
  st.lr = learning_rate(c, step);
  if (c.clip_norm > 0.f && st.grad_norm > c.clip_norm) st.clip_scale = (float)(c.clip_norm / st.grad_norm);
  const float b1 = c.beta1, b2 = c.beta2;
  const float bc1 = 1.f - (float)std::pow((double)b1, step + 1);
  const float bc2 = 1.f - (float)std::pow((double)b2, step + 1);
  const float lr = st.lr, scale = st.clip_scale;
  // Weight decay per element range: norm gains have none.
  std::vector<std::pair<std::int64_t, float>> wd_from;  // (start offset, decay), sorted
  for (const auto& t : p.tensors()) wd_from.push_back({t.offset, t.kind == ParamKind::Norm ? 0.f : c.weight_decay});
  for_blocks(p.count(), pool, [&](std::int64_t a, std::int64_t b) {
    std::size_t ti = std::upper_bound(wd_from.begin(), wd_from.end(), std::make_pair(a, 1e30f)) - wd_from.begin() - 1;
    for (std::int64_t i = a; i < b;) {
      std::int64_t end = ti + 1 < wd_from.size() ? std::min(b, wd_from[ti + 1].first) : b;
      adamw_range(p.master.data() + i, p.adam_m.data() + i, p.adam_v.data() + i, p.grads.data() + i,
                  p.weights.data() + i, end - i, scale, b1, b2, 1.f / bc1, 1.f / bc2, lr, wd_from[ti].second, c.eps);
      i = end;
      ++ti;
    }
  });
  return st;
}

// ---- the optimizer's ops behind the Backend seam (CPU versions) ----

double Backend::sum_squares(const float* x, std::int64_t n) { return trainer::sum_squares(x, n); }

void Backend::adamw(const AdamWStep& s, float* w, float* m, float* v, const float* g, std::uint16_t* wb,
                    std::int64_t n, float wd) {
  adamw_range(w, m, v, g, wb, n, s.scale, s.b1, s.b2, s.inv_bc1, s.inv_bc2, s.lr, wd, s.eps);
}

UpdateStats adamw_update(ParamStore& p, const AdamWConfig& c, int step, Backend& be) {
  return adamw_update_with_norm(p, c, step, std::sqrt(be.sum_squares(p.grads.data(), p.count())), be);
}

UpdateStats adamw_update_with_norm(ParamStore& p, const AdamWConfig& c, int step, double grad_norm, Backend& be) {
  const StepScalars k = step_scalars(c, step, grad_norm);
  AdamWStep s;
  s.scale = k.st.clip_scale;
  s.b1 = k.b1;
  s.b2 = k.b2;
  s.inv_bc1 = k.inv_bc1;
  s.inv_bc2 = k.inv_bc2;
  s.lr = k.st.lr;
  s.eps = c.eps;
  // Tensors tile the flat range in order; each gets its own decay (none for norm gains).
  const auto& ts = p.tensors();
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const std::int64_t a = ts[i].offset, b = i + 1 < ts.size() ? ts[i + 1].offset : p.count();
    be.adamw(s, p.master.data() + a, p.adam_m.data() + a, p.adam_v.data() + a, p.grads.data() + a,
             p.weights.data() + a, b - a, ts[i].kind == ParamKind::Norm ? 0.f : c.weight_decay);
  }
  be.sync();  // a step ends here: checkpoints, probes and pictures may read the weights next
  return k.st;
}

}  // namespace onegpu::trainer
