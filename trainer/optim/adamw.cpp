#include "trainer/optim/adamw.h"

#include <algorithm>
#include <cmath>

#include "trainer/error.h"

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

double global_grad_norm(const ParamStore& p) {
  double s = 0.0;
  const float* g = p.grads.data();
  for (std::int64_t i = 0; i < p.count(); ++i) s += (double)g[i] * g[i];
  return std::sqrt(s);
}

UpdateStats adamw_update(ParamStore& p, const AdamWConfig& c, int step) {
  UpdateStats st;
  st.grad_norm = global_grad_norm(p);
  if (!std::isfinite(st.grad_norm)) throw Error("optimizer: gradient norm is not finite (training diverged)");
  st.lr = learning_rate(c, step);
  if (c.clip_norm > 0.f && st.grad_norm > c.clip_norm) st.clip_scale = (float)(c.clip_norm / st.grad_norm);
  const float b1 = c.beta1, b2 = c.beta2;
  const float bc1 = 1.f - (float)std::pow((double)b1, step + 1);
  const float bc2 = 1.f - (float)std::pow((double)b2, step + 1);
  const float lr = st.lr, scale = st.clip_scale;
  for (const auto& t : p.tensors()) {
    const float wd = t.kind == ParamKind::Norm ? 0.f : c.weight_decay;
    float* w = p.master.data() + t.offset;
    float* m = p.adam_m.data() + t.offset;
    float* v = p.adam_v.data() + t.offset;
    const float* g = p.grads.data() + t.offset;
    bf16* wb = p.weights.data() + t.offset;
    for (std::int64_t i = 0; i < t.size(); ++i) {
      float gi = g[i] * scale;
      m[i] = b1 * m[i] + (1.f - b1) * gi;
      v[i] = b2 * v[i] + (1.f - b2) * gi * gi;
      float mh = m[i] / bc1, vh = v[i] / bc2;
      w[i] -= lr * (mh / (std::sqrt(vh) + c.eps) + wd * w[i]);
      wb[i] = float_to_bf16(w[i]);
    }
  }
  return st;
}

}  // namespace onegpu::trainer
