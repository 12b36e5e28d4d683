// The optimizer through the Backend seam (what a device backend runs) against the optimizer the
// CPU path uses: on a model small enough for the gradient norm to be one block, the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "trainer/model/model.h"
#include "trainer/ops/bf16.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/optim/adamw.h"
#include "tests/support/adamw_step.h"

using namespace onegpu::trainer;

TEST(OptimizerSeam, BackendUpdateEqualsTheCpuUpdate) {
  ModelConfig c;
  c.name = "small";
  c.vocab = 50;
  c.d_model = 16;
  c.n_heads = 2;
  c.n_layers = 2;
  c.n_experts = 4;
  c.expert_hidden = 24;
  c.seq_len = 8;
  MemoryTracker ma, mb;
  CpuBackend be(ma, 1);
  Model a(c, be, ma, 4), b(c, be, mb, 4);
  ASSERT_LT(a.params().count(), 1 << 16);  // one block: global_grad_norm sums as sum_squares does
  AdamWConfig o;
  o.total_steps = 10;
  o.clip_norm = 0.5f;  // clipping on: the scale must agree too
  Rng r(3);
  for (int step = 0; step < 3; ++step) {
    for (std::int64_t i = 0; i < a.params().count(); ++i) a.params().grads[i] = b.params().grads[i] = (float)r.normal();
    UpdateStats ua = adamw_update(a.params(), o, step, nullptr);
    UpdateStats ub = adamw_update(b.params(), o, step, be);
    EXPECT_EQ(ua.grad_norm, ub.grad_norm);
    EXPECT_EQ(ua.clip_scale, ub.clip_scale);
    EXPECT_EQ(ua.lr, ub.lr);
  }
  const auto& pa = a.params();
  const auto& pb = b.params();
  const std::size_t n = (std::size_t)pa.count();
  EXPECT_EQ(std::memcmp(pa.master.data(), pb.master.data(), n * 4), 0);
  EXPECT_EQ(std::memcmp(pa.adam_m.data(), pb.adam_m.data(), n * 4), 0);
  EXPECT_EQ(std::memcmp(pa.adam_v.data(), pb.adam_v.data(), n * 4), 0);
  EXPECT_EQ(std::memcmp(pa.weights.data(), pb.weights.data(), n * 2), 0);
}

// The update rounds each product and sum on its own, on every CPU: the CPU backend's AdamW (built
// in AVX2 and AVX-512 clones, where GCC would fuse a*b+c into one FMA) gives the bits of the plain
// formula written out here, with no fused multiply-add (this file is built for baseline x86-64,
// which has none). The GPU's kernel is built without FMA too, so it gives these bits as well.
TEST(OptimizerSeam, AdamWRoundsEveryStepOnItsOwn) {
  const long n = 4099;  // whole vectors and a tail
  Rng r(21);
  std::vector<float> g(n), w(n), m(n), v(n);
  for (long i = 0; i < n; ++i) {
    g[i] = (float)r.normal();
    w[i] = (float)r.normal() * 0.02f;
    m[i] = (float)r.normal() * 0.1f;
    v[i] = std::fabs((float)r.normal()) * 0.1f;
  }
  const AdamWStep s = ::onegpu::test::sample_adamw_step();
  const float wd = 0.1f;
  std::vector<float> w1 = w, m1 = m, v1 = v;
  std::vector<bf16> wb(n);
  MemoryTracker mt;
  CpuBackend be(mt, 1);
  be.adamw(s, w1.data(), m1.data(), v1.data(), g.data(), wb.data(), n, wd);
  long differ = 0;
  for (long i = 0; i < n; ++i) {
    volatile float gi = g[i] * s.scale;  // volatile: each rounding stands, whatever the compiler
    volatile float a = s.b1 * m[i], b = (1.f - s.b1) * gi;
    volatile float mi = a + b;
    volatile float c = s.b2 * v[i], d = (1.f - s.b2) * gi;
    volatile float e = d * gi;
    volatile float vi = c + e;
    volatile float den = std::sqrt(vi * s.inv_bc2) + s.eps;
    volatile float q = mi * s.inv_bc1 / den;
    volatile float dec = wd * w[i];
    volatile float step = q + dec;
    volatile float wi = w[i] - s.lr * step;
    if (m1[i] != mi || v1[i] != vi || w1[i] != wi || wb[i] != float_to_bf16(wi)) ++differ;
  }
  EXPECT_EQ(differ, 0) << "of " << n << " elements";
}
