// The optimizer through the Backend seam (what a device backend runs) against the optimizer the
// CPU path uses: on a model small enough for the gradient norm to be one block, the same bits.
#include <gtest/gtest.h>

#include <cstring>

#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/optim/adamw.h"

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
