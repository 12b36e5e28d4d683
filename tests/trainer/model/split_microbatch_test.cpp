// A microbatch's texts split among worker threads (SplitMicrobatch, run by SplitStep) against
// Model::forward_backward on one thread: the same losses and the same gradients, bit for bit,
// for 1, 2 and 3 workers, even and uneven splits, two microbatches accumulating.
#include <gtest/gtest.h>

#include <cstring>

#include "trainer/error.h"
#include "trainer/memory/tracker.h"
#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/train/split_step.h"

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

Batch texts(const Batch& b, int first, int n) {
  Batch out;
  out.B = n;
  out.S = b.S;
  out.inputs.assign(b.inputs.begin() + (long)first * b.S, b.inputs.begin() + (long)(first + n) * b.S);
  out.targets.assign(b.targets.begin() + (long)first * b.S, b.targets.begin() + (long)(first + n) * b.S);
  return out;
}

// Two microbatches of `per` texts: one thread, then SplitStep on `threads` threads.
void expect_same_as_one_thread(ModelConfig c, int per, int threads) {
  SCOPED_TRACE(testing::Message() << c.name << " " << c.n_layers << " layers, " << per << " texts, " << threads
                                  << " threads");
  const Batch batch = random_batch(c.vocab, 2 * per, c.seq_len, 40);
  const LossScales sc{1.f / 97, 0.5f};
  MemoryTracker mt1, mt2;
  CpuBackend one(mt1), pooled(mt2, threads);
  Model a(c, one, mt1, 11), b(c, pooled, mt2, 11);
  MicrobatchState sa;
  double ce = 0.0, aux = 0.0;
  for (int micro = 0; micro < 2; ++micro) {  // the second accumulates onto the first's gradients
    a.forward_backward(sa, texts(batch, micro * per, per), sc);
    ce += sa.ce_sum;
    aux += sa.aux_sum;
  }
  SplitStep split(b, mt2, pooled.pool(), per);
  EXPECT_EQ(split.workers(), std::min(threads, per));
  const SplitStep::Losses l = split.forward_backward(batch, 2, sc);
  EXPECT_EQ(std::memcmp(&ce, &l.ce_sum, sizeof(double)), 0) << ce << " " << l.ce_sum;
  EXPECT_EQ(std::memcmp(&aux, &l.aux_sum, sizeof(double)), 0) << aux << " " << l.aux_sum;
  ASSERT_EQ(a.params().count(), b.params().count());
  EXPECT_EQ(std::memcmp(a.params().grads.data(), b.params().grads.data(), (std::size_t)a.params().count() * 4), 0);
  // A second step on the same object (turns and meetings start again) gives the same again.
  b.params().zero_grads();
  const SplitStep::Losses l2 = split.forward_backward(batch, 2, sc);
  EXPECT_EQ(std::memcmp(&l.ce_sum, &l2.ce_sum, sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(a.params().grads.data(), b.params().grads.data(), (std::size_t)a.params().count() * 4), 0);
}

TEST(SplitMicrobatch, StoryGivesTheGradientsOfOneThread) {
  ModelConfig c = model_preset("story");
  c.vocab = 300;
  c.seq_len = 32;
  for (int threads : {1, 2, 3}) expect_same_as_one_thread(c, 4, threads);
  expect_same_as_one_thread(c, 3, 2);  // 1 and 2 texts
}

TEST(SplitMicrobatch, ScaleShapeAndASingleBlock) {
  ModelConfig c = model_preset("scale");
  c.vocab = 200;
  c.seq_len = 16;
  c.n_layers = 3;
  expect_same_as_one_thread(c, 2, 2);
  c.n_layers = 1;
  expect_same_as_one_thread(c, 2, 2);
}

TEST(SplitMicrobatch, AFailingWorkerStopsTheOthers) {
  ModelConfig c = model_preset("story");
  c.vocab = 300;
  c.seq_len = 32;
  MemoryTracker mt;
  CpuBackend pooled(mt, 2);
  Model m(c, pooled, mt, 11);
  SplitStep split(m, mt, pooled.pool(), 2);
  Batch bad = random_batch(c.vocab, 2, c.seq_len, 3);
  bad.inputs.back() = c.vocab;  // the second worker's text holds a token outside the vocabulary
  EXPECT_THROW(split.forward_backward(bad, 1, {1.f, 1.f}), Error);
  // The object is usable again, and a good batch gives one thread's numbers.
  Batch good = random_batch(c.vocab, 2, c.seq_len, 3);
  m.params().zero_grads();
  EXPECT_NO_THROW(split.forward_backward(good, 1, {1.f, 1.f}));
  EXPECT_THROW(split.forward_backward(random_batch(c.vocab, 3, c.seq_len, 3), 1, {1.f, 1.f}), Error);
}

}  // namespace
}  // namespace onegpu::trainer
