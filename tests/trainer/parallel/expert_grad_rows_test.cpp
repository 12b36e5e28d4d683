// ExpertGradRows: the expert weight gradients of a step's rows taken once equal, bit for bit,
// the gradients taken microbatch by microbatch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/parallel/expert_grad_rows.h"

using namespace onegpu::trainer;

namespace {

ModelConfig small() {
  ModelConfig c;
  c.vocab = 32;
  c.d_model = 32;
  c.n_heads = 2;
  c.n_layers = 2;
  c.n_experts = 4;
  c.expert_hidden = 48;
  c.seq_len = 8;
  return c;
}

// One microbatch's rows for each expert, expert-major, with values of mixed magnitude (so a
// different summation order would show in the last bits).
struct Rows {
  std::vector<std::int32_t> offsets;
  ExpertCache c;
  std::vector<float> dy, du;
};

Rows rows(MemoryTracker& mt, const ModelConfig& m, const std::vector<int>& per_expert, std::uint32_t seed) {
  Rows r;
  r.offsets.push_back(0);
  for (int n : per_expert) r.offsets.push_back(r.offsets.back() + n);
  const std::size_t n = (std::size_t)r.offsets.back(), D = m.d_model, H = m.expert_hidden;
  auto fill = [&](float* p, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      seed = seed * 1664525u + 1013904223u;
      p[i] = (float)((int)(seed >> 8) % 20001 - 10000) * ((seed & 1) ? 1e-3f : 1e-7f);
    }
  };
  r.c.xe = Buffer<float>(mt, MemCategory::Activations, n * D, false);
  r.c.a = Buffer<float>(mt, MemCategory::Activations, n * H, false);
  r.dy.resize(n * D);
  r.du.resize(n * H);
  fill(r.c.xe.data(), n * D);
  fill(r.c.a.data(), n * H);
  fill(r.dy.data(), n * D);
  fill(r.du.data(), n * H);
  return r;
}

}  // namespace

TEST(ExpertGradRows, OneProductAStepEqualsOneAMicrobatchBitwise) {
  const ModelConfig m = small();
  MemoryTracker mt_a, mt_b, mt_rows;
  CpuBackend be_a(mt_a, 1), be_b(mt_b, 1);
  Model a(m, be_a, mt_a, 7), b(m, be_b, mt_b, 7);
  // Three microbatches; experts with no rows in some of them, one with none at all.
  std::vector<Rows> mbs;
  mbs.push_back(rows(mt_rows, m, {2, 0, 3, 0}, 1));
  mbs.push_back(rows(mt_rows, m, {1, 4, 0, 0}, 2));
  mbs.push_back(rows(mt_rows, m, {0, 1, 7, 0}, 3));
  const int l = 1;
  ExpertGradRows kept(m.n_experts, m.d_model, m.expert_hidden);
  for (const Rows& r : mbs) {
    a.experts_backward_weight(l, r.offsets, r.c, r.dy.data(), r.du.data());
    kept.add(r.offsets, r.c.xe.data(), r.c.a.data(), r.dy.data(), r.du.data());
  }
  EXPECT_EQ(kept.microbatches(), 3);
  kept.apply(b, l);
  EXPECT_EQ(kept.microbatches(), 0);
  const auto& ga = a.params().grads;
  const auto& gb = b.params().grads;
  ASSERT_EQ(ga.size(), gb.size());
  EXPECT_EQ(std::memcmp(ga.data(), gb.data(), ga.size() * sizeof(float)), 0);
  double sum = 0;
  for (float g : ga) sum += g < 0 ? -g : g;
  EXPECT_GT(sum, 0.0);  // the products did write something
}

// apply_to (an expert group's sum made outside the members' own gradients) adds, from zeros,
// bitwise what apply adds to a model's zeroed gradients of that layer, laid out the same.
TEST(ExpertGradRows, ApplyToAScratchEqualsApplyToTheModelBitwise) {
  const ModelConfig m = small();
  MemoryTracker mt, mt_rows;
  CpuBackend be(mt, 1);
  Model model(m, be, mt, 7);
  ExpertGradRows into_model(m.n_experts, m.d_model, m.expert_hidden), into_scratch(m.n_experts, m.d_model, m.expert_hidden);
  std::vector<Rows> mbs;
  mbs.push_back(rows(mt_rows, m, {2, 0, 3, 1}, 5));
  mbs.push_back(rows(mt_rows, m, {0, 4, 0, 2}, 6));
  for (const Rows& r : mbs) {
    into_model.add(r.offsets, r.c.xe.data(), r.c.a.data(), r.dy.data(), r.du.data());
    into_scratch.add(r.offsets, r.c.xe.data(), r.c.a.data(), r.dy.data(), r.du.data());
  }
  const int l = 1;
  into_model.apply(model, l);
  const auto& L = model.params().layer_layout();
  const std::size_t n = (std::size_t)(L.size - L.experts);
  std::vector<float> scratch(n, 0.f);
  into_scratch.apply_to(be, scratch.data(), (long)L.expert_stride);
  EXPECT_EQ(into_scratch.microbatches(), 0);
  const float* g = model.params().grads.data() + model.params().layer_offset(l) + L.experts;
  EXPECT_EQ(std::memcmp(g, scratch.data(), n * sizeof(float)), 0);
  EXPECT_TRUE(std::any_of(scratch.begin(), scratch.end(), [](float x) { return x != 0.f; }));
  // Nothing came: the scratch is left as it was.
  std::vector<float> untouched(n, 0.f);
  into_scratch.apply_to(be, untouched.data(), (long)L.expert_stride);
  EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](float x) { return x == 0.f; }));
}

TEST(ExpertGradRows, ForgottenRowsAddNothing) {
  const ModelConfig m = small();
  MemoryTracker mt, mt_rows;
  CpuBackend be(mt, 1);
  Model model(m, be, mt, 7);
  const Rows r = rows(mt_rows, m, {2, 1, 0, 3}, 4);
  ExpertGradRows kept(m.n_experts, m.d_model, m.expert_hidden);
  kept.add(r.offsets, r.c.xe.data(), r.c.a.data(), r.dy.data(), r.du.data());
  kept.forget();
  EXPECT_EQ(kept.microbatches(), 0);
  kept.apply(model, 0);
  for (float g : model.params().grads) ASSERT_EQ(g, 0.f);
  EXPECT_THROW(kept.add({0, 1}, r.c.xe.data(), r.c.a.data(), r.dy.data(), r.du.data()), Error);
}
