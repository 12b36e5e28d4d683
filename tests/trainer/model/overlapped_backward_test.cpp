// Model::forward_backward_overlapped (weight gradients on a second thread) against
// Model::forward_backward on one thread: the same losses and the same gradients, bit for bit.
#include <gtest/gtest.h>

#include <cstring>

#include "trainer/memory/tracker.h"
#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"

namespace onegpu::trainer {
namespace {

Batch random_batch(int vocab, int B, int S, std::uint64_t seed) {
  Rng rng(seed);
  Batch b;
  b.B = B;
  b.S = S;
  for (int i = 0; i < B * S; ++i) {
    b.inputs.push_back((std::int32_t)(rng.next() % (std::uint64_t)vocab));
    // a few ignored targets, as padding makes them
    b.targets.push_back(i % 7 == 3 ? -1 : (std::int32_t)(rng.next() % (std::uint64_t)vocab));
  }
  return b;
}

void expect_same_as_one_thread(ModelConfig c) {
  MemoryTracker mt1, mt2;
  CpuBackend one(mt1), main_be(mt2), helper(mt2);
  Model a(c, one, mt1, 11), b(c, main_be, mt2, 11);
  const LossScales sc{1.f / 64, 0.5f};
  MicrobatchState sa, sb;
  for (int micro = 0; micro < 2; ++micro) {  // the second accumulates onto the first's gradients
    const Batch batch = random_batch(c.vocab, 2, c.seq_len, 40 + micro);
    a.forward_backward(sa, batch, sc);
    b.forward_backward_overlapped(sb, batch, sc, helper);
    EXPECT_EQ(std::memcmp(&sa.ce_sum, &sb.ce_sum, sizeof(double)), 0) << "microbatch " << micro;
    EXPECT_EQ(std::memcmp(&sa.aux_sum, &sb.aux_sum, sizeof(double)), 0) << "microbatch " << micro;
  }
  ASSERT_EQ(a.params().count(), b.params().count());
  EXPECT_EQ(std::memcmp(a.params().grads.data(), b.params().grads.data(), (std::size_t)a.params().count() * 4), 0);
  // Every activation is released; what stays is the backends' transpose scratch, as on one thread.
  EXPECT_EQ(mt2.stats().current[(int)MemCategory::Activations], mt1.stats().current[(int)MemCategory::Activations]);
}

TEST(OverlappedBackward, StoryGivesTheGradientsOfOneThread) {
  ModelConfig c = model_preset("story");
  c.vocab = 300;
  c.seq_len = 32;
  expect_same_as_one_thread(c);
}

TEST(OverlappedBackward, ScaleShapeAndASingleBlock) {
  ModelConfig c = model_preset("scale");
  c.vocab = 200;
  c.seq_len = 16;
  c.n_layers = 3;
  expect_same_as_one_thread(c);
  c.n_layers = 1;
  expect_same_as_one_thread(c);
}

}  // namespace
}  // namespace onegpu::trainer
