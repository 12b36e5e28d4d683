#include "trainer/model/moe.h"

#include <algorithm>
#include <cmath>

#include "trainer/error.h"

namespace onegpu::trainer {

namespace {
const float* w1_of(const MoeWeights& w, int e) { return w.experts + e * w.expert_stride; }
const float* w2_of(const MoeWeights& w, int e, const MoeShape& s) {
  return w.experts + e * w.expert_stride + (long)s.D * s.H;
}
double lse_row(const float* l, int E) {
  float mx = l[0];
  for (int e = 1; e < E; ++e) mx = std::max(mx, l[e]);
  double sum = 0.0;
  for (int e = 0; e < E; ++e) sum += std::exp((double)(l[e] - mx));
  return mx + std::log(sum);
}
// The forward's value when it kept one (the same function of the same logits).
double lse_of(const Routing& r, int t) {
  return (int)r.lse.size() == r.T ? r.lse[t] : lse_row(r.logits.data() + (long)t * r.E, r.E);
}
}  // namespace

void moe_route(Backend& be, MemoryTracker& mt, const MoeShape& s, const float* h, const MoeWeights& w,
               const std::int32_t* forced, Routing& r) {
  const int T = s.T, E = s.E, k = s.k, n = T * k;
  r.T = T;
  r.k = k;
  r.E = E;
  auto act = MemCategory::Activations;
  r.logits = Buffer<float>(mt, act, (std::size_t)T * E);
  r.probs = Buffer<float>(mt, act, (std::size_t)T * E);
  r.expert = Buffer<std::int32_t>(mt, act, n);
  r.gate = Buffer<float>(mt, act, n);
  r.order = Buffer<std::int32_t>(mt, act, n);
  r.token_of_row = Buffer<std::int32_t>(mt, act, n);
  r.row_of_slot = Buffer<std::int32_t>(mt, act, n);
  be.matmul(h, w.router, r.logits.data(), T, s.D, E, false, false, false);
  be.softmax_rows(r.logits.data(), r.probs.data(), T, E);
  be.sync();  // top-k and the auxiliary losses run on the host

  for (int t = 0; t < T; ++t) {
    const float* p = r.probs.data() + (long)t * E;
    std::int32_t* ex = r.expert.data() + (long)t * k;
    if (forced) {
      for (int j = 0; j < k; ++j) {
        if (forced[t * k + j] < 0 || forced[t * k + j] >= E) throw Error("forced routing: expert id out of range");
        ex[j] = forced[t * k + j];
      }
    } else {
      // top-k by probability; ties go to the lower expert index
      for (int j = 0; j < k; ++j) {
        int best = -1;
        for (int e = 0; e < E; ++e) {
          bool taken = false;
          for (int q = 0; q < j; ++q) taken |= ex[q] == e;
          if (!taken && (best < 0 || p[e] > p[best])) best = e;
        }
        ex[j] = best;
      }
    }
    float sum = 0.f;
    for (int j = 0; j < k; ++j) sum += p[ex[j]];
    for (int j = 0; j < k; ++j) r.gate[t * k + j] = p[ex[j]] / sum;
  }

  // Counting sort of slots by expert, stable in token order.
  r.offsets.assign(E + 1, 0);
  for (int q = 0; q < n; ++q) r.offsets[r.expert[q] + 1]++;
  for (int e = 0; e < E; ++e) r.offsets[e + 1] += r.offsets[e];
  std::vector<std::int32_t> fill(r.offsets.begin(), r.offsets.end() - 1);
  for (int q = 0; q < n; ++q) {
    int row = fill[r.expert[q]]++;
    r.order[row] = q;
    r.token_of_row[row] = q / k;
    r.row_of_slot[q] = row;
  }

  r.lse.resize(T);
  for (int t = 0; t < T; ++t) r.lse[t] = lse_row(r.logits.data() + (long)t * E, E);
  r.batch_T = T;
  r.batch_counts.resize(E);
  for (int e = 0; e < E; ++e) r.batch_counts[e] = r.offsets[e + 1] - r.offsets[e];
  moe_router_losses({&r}, s.aux_coef, s.z_coef, r.aux_loss, r.z_loss);
}

void moe_router_losses(const std::vector<const Routing*>& parts, float aux_coef, float z_coef, double& aux_loss,
                       double& z_loss) {
  const int E = parts.front()->E, k = parts.front()->k;
  int T = 0;
  for (const Routing* p : parts) T += p->T;
  const int n = T * k;
  // Switch load balancing: E * sum_e f_e * P_e, f = share of dispatched slots, P = mean prob.
  double aux = 0.0;
  for (int e = 0; e < E; ++e) {
    int count = 0;
    for (const Routing* p : parts) count += p->offsets[e + 1] - p->offsets[e];
    double f = (double)count / n, P = 0.0;
    for (const Routing* p : parts)
      for (int t = 0; t < p->T; ++t) P += p->probs[(long)t * E + e];
    aux += f * (P / T);
  }
  aux_loss = aux_coef * E * aux;
  double z = 0.0;
  for (const Routing* p : parts)
    for (int t = 0; t < p->T; ++t) {
      double l = p->lse[t];
      z += l * l;
    }
  z_loss = z_coef * z / T;
}

void moe_dispatch(Backend& be, const MoeShape& s, const Routing& r, const float* h, float* xe) {
  be.gather_rows(h, r.token_of_row.data(), xe, s.T * s.k, s.D);
}

void moe_experts_forward(Backend& be, const MoeShape& s, const Routing& r, const MoeWeights& w,
                         ExpertCache& c) {
  // Experts are independent (disjoint rows in, disjoint rows out): one task each.
  be.parallel_tasks(s.E, [&](int e) {
    int o = r.offsets[e], n = r.offsets[e + 1] - o;
    if (n == 0) return;
    float* u = c.u.data() + (long)o * s.H;
    float* a = c.a.data() + (long)o * s.H;
    be.matmul(c.xe.data() + (long)o * s.D, w1_of(w, e), u, n, s.D, s.H, false, false, false);
    be.silu_forward(u, a, (long)n * s.H);
    be.matmul(a, w2_of(w, e, s), c.y.data() + (long)o * s.D, n, s.H, s.D, false, false, false);
  });
}

void moe_combine(Backend& be, const MoeShape& s, const Routing& r, const float* y, float* out) {
  const int n = s.T * s.k;
  std::vector<float> gate_of_row(n);
  for (int row = 0; row < n; ++row) gate_of_row[row] = r.gate[r.order[row]];
  be.scatter_add_rows(y, r.token_of_row.data(), gate_of_row.data(), out, n, s.D);
}

// The CPU versions of two Backend ops (backend.h); a device backend runs them as kernels.
void Backend::combine_backward(const float* y, const float* dout, const std::int32_t* order,
                               const std::int32_t* token_of_row, const float* gate, float* dy, float* dgate, int n,
                               int D) {
  // Rows four at a time: their dots (each in d order) side by side, as one chain alone waits on
  // its add's latency at every d.
  int row = 0;
  for (; row + 4 <= n; row += 4) {
    const float* go[4];
    float dot[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k = 0; k < 4; ++k) {
      go[k] = dout + (long)token_of_row[row + k] * D;
      const float g = gate[order[row + k]];
      float* dyr = dy + (long)(row + k) * D;
      for (int d = 0; d < D; ++d) dyr[d] = g * go[k][d];
    }
    const float* y0 = y + (long)row * D;
    for (int d = 0; d < D; ++d)
      for (int k = 0; k < 4; ++k) dot[k] += go[k][d] * y0[(long)k * D + d];
    for (int k = 0; k < 4; ++k) dgate[order[row + k]] = dot[k];
  }
  for (; row < n; ++row) {
    int slot = order[row], t = token_of_row[row];
    float g = gate[slot];
    const float* go = dout + (long)t * D;
    const float* yr = y + (long)row * D;
    float* dyr = dy + (long)row * D;
    float dot = 0.f;
    for (int d = 0; d < D; ++d) {
      dyr[d] = g * go[d];
      dot += go[d] * yr[d];
    }
    dgate[slot] = dot;
  }
}

void Backend::dispatch_backward(const float* dxe, const std::int32_t* row_of_slot, float* dh, int T, int k, int D) {
  for (int slot = 0; slot < T * k; ++slot) {  // slot order: each token sums its k rows in order
    int row = row_of_slot[slot], t = slot / k;
    const float* src = dxe + (long)row * D;
    float* dst = dh + (long)t * D;
    for (int d = 0; d < D; ++d) dst[d] += src[d];
  }
}

void moe_combine_backward(Backend& be, const MoeShape& s, const Routing& r, const float* y, const float* dout,
                          float* dy, float* dgate) {
  be.combine_backward(y, dout, r.order.data(), r.token_of_row.data(), r.gate.data(), dy, dgate, s.T * s.k, s.D);
}

void moe_experts_backward(Backend& be, MemoryTracker& mt, const MoeShape& s, const Routing& r,
                          const MoeWeights& w, const ExpertCache& c, const float* dy, float* dxe,
                          const MoeGrads& g) {
  const int n_all = s.T * s.k;
  Buffer<float> da(mt, MemCategory::Activations, (std::size_t)n_all * s.H, false);
  Buffer<float> du(mt, MemCategory::Activations, (std::size_t)n_all * s.H, false);
  be.parallel_tasks(s.E, [&](int e) {  // disjoint rows and disjoint weight gradients per expert
    int o = r.offsets[e], n = r.offsets[e + 1] - o;
    if (n == 0) return;
    const float* dye = dy + (long)o * s.D;
    float* dae = da.data() + (long)o * s.H;
    float* due = du.data() + (long)o * s.H;
    float* gw1 = g.experts + e * g.expert_stride;
    float* gw2 = gw1 + (long)s.D * s.H;
    be.matmul(dye, w2_of(w, e, s), dae, n, s.D, s.H, false, true, false);                  // da = dy W2^T
    be.matmul(c.a.data() + (long)o * s.H, dye, gw2, s.H, n, s.D, true, false, true);     // dW2 += a^T dy
    be.silu_backward(c.u.data() + (long)o * s.H, dae, due, (long)n * s.H);
    be.matmul(c.xe.data() + (long)o * s.D, due, gw1, s.D, n, s.H, true, false, true);    // dW1 += x^T du
    be.matmul(due, w1_of(w, e), dxe + (long)o * s.D, n, s.H, s.D, false, true, false);   // dx = du W1^T
  });
}

void moe_dispatch_backward(Backend& be, const MoeShape& s, const Routing& r, const float* dxe, float* dh) {
  be.dispatch_backward(dxe, r.row_of_slot.data(), dh, s.T, s.k, s.D);
}

void moe_route_backward(Backend& be, MemoryTracker& mt, const MoeShape& s, const Routing& r,
                        const float* h, const MoeWeights& w, const float* dgate, float aux_scale,
                        float* dh, const MoeGrads& g) {
  const int T = s.T, E = s.E, k = s.k;
  be.sync();  // the router's backward runs on the host: it reads dgate
  Buffer<float> dlogits(mt, MemCategory::Activations, (std::size_t)T * E, false);
  // The router losses are means over the whole microbatch (batch_T tokens, batch_counts).
  const int Tb = r.batch_T, nb = Tb * k;
  std::vector<double> f(E);
  for (int e = 0; e < E; ++e) f[e] = (double)r.batch_counts[e] / nb;
  std::vector<float> dp(E);
  for (int t = 0; t < T; ++t) {
    const float* p = r.probs.data() + (long)t * E;
    std::fill(dp.begin(), dp.end(), 0.f);
    // gates g_j = p_j / S: dp_j = (dg_j - sum_m dg_m g_m) / S
    float S = 0.f, gs = 0.f;
    for (int j = 0; j < k; ++j) {
      S += p[r.expert[t * k + j]];
      gs += dgate[t * k + j] * r.gate[t * k + j];
    }
    for (int j = 0; j < k; ++j) dp[r.expert[t * k + j]] += (dgate[t * k + j] - gs) / S;
    for (int e = 0; e < E; ++e) dp[e] += (float)(aux_scale * s.aux_coef * E * f[e] / Tb);
    float dot = 0.f;
    for (int e = 0; e < E; ++e) dot += p[e] * dp[e];
    float zc = (float)(aux_scale * s.z_coef * 2.0 * lse_of(r, t) / Tb);
    float* dl = dlogits.data() + (long)t * E;
    for (int e = 0; e < E; ++e) dl[e] = p[e] * (dp[e] - dot) + zc * p[e];
  }
  be.matmul(h, dlogits.data(), g.router, s.D, T, E, true, false, true);     // dWr += h^T dl
  be.matmul(dlogits.data(), w.router, dh, T, E, s.D, false, true, true);    // dh += dl Wr^T
}

void moe_experts_backward_input(Backend& be, MemoryTracker& mt, const MoeShape& s, const Routing& r,
                                const MoeWeights& w, const ExpertCache& c, const float* dy, float* dxe, float* du) {
  const int n_all = s.T * s.k;
  Buffer<float> da(mt, MemCategory::Activations, (std::size_t)n_all * s.H, false);
  be.parallel_tasks(s.E, [&](int e) {
    int o = r.offsets[e], n = r.offsets[e + 1] - o;
    if (n == 0) return;
    const float* dye = dy + (long)o * s.D;
    float* dae = da.data() + (long)o * s.H;
    float* due = du + (long)o * s.H;
    be.matmul(dye, w2_of(w, e, s), dae, n, s.D, s.H, false, true, false);                  // da = dy W2^T
    be.silu_backward(c.u.data() + (long)o * s.H, dae, due, (long)n * s.H);
    be.matmul(due, w1_of(w, e), dxe + (long)o * s.D, n, s.H, s.D, false, true, false);   // dx = du W1^T
  });
}

void moe_expert_backward_weight(Backend& be, const MoeShape& s, const Routing& r, const ExpertCache& c,
                                const float* dy, const float* du, const MoeGrads& g, int e) {
  int o = r.offsets[e], n = r.offsets[e + 1] - o;
  if (n == 0) return;
  float* gw1 = g.experts + e * g.expert_stride;
  float* gw2 = gw1 + (long)s.D * s.H;
  be.matmul(c.a.data() + (long)o * s.H, dy + (long)o * s.D, gw2, s.H, n, s.D, true, false, true);  // dW2 += a^T dy
  be.matmul(c.xe.data() + (long)o * s.D, du + (long)o * s.H, gw1, s.D, n, s.H, true, false, true); // dW1 += x^T du
}

void moe_experts_backward_weight(Backend& be, const MoeShape& s, const Routing& r, const ExpertCache& c,
                                 const float* dy, const float* du, const MoeGrads& g) {
  be.parallel_tasks(s.E, [&](int e) { moe_expert_backward_weight(be, s, r, c, dy, du, g, e); });
}

void moe_route_backward_input(Backend& be, const MoeShape& s, const Routing& r, const MoeWeights& w,
                              const float* dgate, float aux_scale, float* dh, float* dlogits) {
  const int T = s.T, E = s.E, k = s.k;
  be.sync();  // the router's backward runs on the host: it reads dgate and writes dlogits
  // The router losses are means over the whole microbatch (batch_T tokens, batch_counts).
  const int Tb = r.batch_T, nb = Tb * k;
  std::vector<double> f(E);
  for (int e = 0; e < E; ++e) f[e] = (double)r.batch_counts[e] / nb;
  std::vector<float> dp(E);
  for (int t = 0; t < T; ++t) {  // the same arithmetic as moe_route_backward
    const float* p = r.probs.data() + (long)t * E;
    std::fill(dp.begin(), dp.end(), 0.f);
    float S = 0.f, gs = 0.f;
    for (int j = 0; j < k; ++j) {
      S += p[r.expert[t * k + j]];
      gs += dgate[t * k + j] * r.gate[t * k + j];
    }
    for (int j = 0; j < k; ++j) dp[r.expert[t * k + j]] += (dgate[t * k + j] - gs) / S;
    for (int e = 0; e < E; ++e) dp[e] += (float)(aux_scale * s.aux_coef * E * f[e] / Tb);
    float dot = 0.f;
    for (int e = 0; e < E; ++e) dot += p[e] * dp[e];
    float zc = (float)(aux_scale * s.z_coef * 2.0 * lse_of(r, t) / Tb);
    float* dl = dlogits + (long)t * E;
    for (int e = 0; e < E; ++e) dl[e] = p[e] * (dp[e] - dot) + zc * p[e];
  }
  be.matmul(dlogits, w.router, dh, T, E, s.D, false, true, true);  // dh += dl Wr^T
}

void moe_route_backward_weight(Backend& be, const MoeShape& s, const float* h, const float* dlogits,
                               const MoeGrads& g) {
  be.matmul(h, dlogits, g.router, s.D, s.T, s.E, true, false, true);  // dWr += h^T dl
}

}  // namespace onegpu::trainer
