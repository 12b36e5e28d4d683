// The CPU step's microbatches cut into fixed shards of their texts, or two whole microbatches
// on two threads at once (SplitStep): the same losses, gradients and, after a few AdamW steps,
// weights on 1, 2 and 3 threads (and with the shards or the pair one after the other on one
// thread), bit for bit; the losses and every gradient those of Model::forward_backward on all
// the texts exactly; the memory figures those of one microbatch at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "trainer/error.h"
#include "trainer/memory/tracker.h"
#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/optim/adamw.h"
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

bool same(const std::vector<float>& a, const float* b) { return std::memcmp(a.data(), b, a.size() * 4) == 0; }
bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

struct Run {
  double ce = 0.0, aux = 0.0;
  std::vector<float> grads, master;  // after the first step; after every step
};

// `steps` steps of `micro` microbatches of `per` texts on `threads` threads: zeroed gradients,
// SplitStep, AdamW, as Trainer::step does them. alone: the shards even on one thread.
Run run(const ModelConfig& c, int per, int threads, int steps, bool alone = false, int micro = 2) {
  MemoryTracker mt;
  CpuBackend be(mt, threads);
  Model m(c, be, mt, 11);
  SplitStep split(m, mt, be.pool(), per);
  split.set_shards_on_one_thread(alone);
  EXPECT_EQ(split.shards(), std::min(SplitStep::kShards, per));
  EXPECT_EQ(split.workers(), std::min(threads, split.shards()));
  AdamWConfig opt;
  opt.total_steps = steps;
  const LossScales sc{1.f / 97, 0.5f};
  Run r;
  for (int s = 0; s < steps; ++s) {
    zero_grads(m.params(), be.pool());
    const SplitStep::Losses l = split.forward_backward(random_batch(c.vocab, micro * per, c.seq_len, 40 + s), micro, sc);
    if (s == 0) {
      r.ce = l.ce_sum;
      r.aux = l.aux_sum;
      r.grads.assign(m.params().grads.data(), m.params().grads.data() + m.params().count());
    }
    adamw_update(m.params(), opt, s, be.pool());
  }
  r.master.assign(m.params().master.data(), m.params().master.data() + m.params().count());
  return r;
}

void expect_same_on_every_thread_count(const ModelConfig& c, int per, int steps, int micro = 2) {
  SCOPED_TRACE(testing::Message() << c.name << " " << c.n_layers << " layers, " << micro << " microbatches of "
                                  << per << " texts");
  const Run one = run(c, per, 1, steps, false, micro);
  for (int threads : {0, 2, 3}) {  // 0: one thread running the shards (or the pair) one after the other
    SCOPED_TRACE(testing::Message() << threads << " threads");
    const Run t = run(c, per, std::max(threads, 1), steps, threads == 0, micro);
    EXPECT_TRUE(same(one.ce, t.ce)) << one.ce << " " << t.ce;
    EXPECT_TRUE(same(one.aux, t.aux)) << one.aux << " " << t.aux;
    EXPECT_TRUE(same(one.grads, t.grads.data()));
    EXPECT_TRUE(same(one.master, t.master.data()));
  }
}

TEST(SplitStep, StoryGivesTheSameBitsOnOneTwoAndThreeThreads) {
  ModelConfig c = model_preset("story");
  c.vocab = 300;
  c.seq_len = 32;
  expect_same_on_every_thread_count(c, 4, 3);
  expect_same_on_every_thread_count(c, 3, 2);  // shards of 1 and 2 texts
  expect_same_on_every_thread_count(c, 1, 2);  // one text: one shard
}

TEST(SplitStep, OddAndEvenMicrobatchCountsGiveTheSameBitsOnEveryThreadCount) {
  // Two threads take microbatches two at a time, whole; an odd one left over is cut in shards.
  ModelConfig c = model_preset("story");
  c.vocab = 300;
  c.seq_len = 32;
  expect_same_on_every_thread_count(c, 2, 2, 3);
  expect_same_on_every_thread_count(c, 3, 2, 4);
  expect_same_on_every_thread_count(c, 1, 2, 5);
  expect_same_on_every_thread_count(c, 4, 2, 1);  // one microbatch: shards only
}

TEST(SplitStep, TwoMicrobatchesAtOnceShowOneMicrobatchsMemory) {
  // The device runs microbatches one after the other; two CPU threads running two at once
  // charge the second one's activations to a tracker of their own, so the step's activation
  // peak is about one microbatch's (not two), and nothing is left charged after the step.
  ModelConfig c = model_preset("story");
  c.vocab = 300;
  c.seq_len = 32;
  auto peak = [&](int threads, int micro) {
    MemoryTracker mt;
    CpuBackend be(mt, threads);
    Model m(c, be, mt, 11);
    SplitStep split(m, mt, be.pool(), 4);
    const std::int64_t before = mt.current(MemCategory::Activations);
    mt.reset_peaks();
    zero_grads(m.params(), be.pool());
    split.forward_backward(random_batch(c.vocab, 4 * micro, c.seq_len, 5), micro, {1.f / 97, 0.5f});
    EXPECT_LE(mt.current(MemCategory::Activations), before + (std::int64_t{1} << 20));  // the backends' scratch
    return mt.peak(MemCategory::Activations) - before;
  };
  const std::int64_t one = peak(1, 2), two = peak(2, 2), single = peak(2, 1);
  EXPECT_GT(one, 0);
  EXPECT_LT(two, one * 5 / 4) << one << " " << two;
  EXPECT_GT(two, one * 3 / 4) << one << " " << two;
  EXPECT_LT(two, single * 5 / 4) << single << " " << two;
}

TEST(SplitStep, ScaleGivesTheSameBitsOnOneTwoAndThreeThreads) {
  ModelConfig c = model_preset("scale");
  c.vocab = 200;
  c.seq_len = 16;
  c.n_layers = 4;
  expect_same_on_every_thread_count(c, 4, 3);
  c.n_layers = 1;
  expect_same_on_every_thread_count(c, 2, 2);
}

TEST(SplitStep, GradientsOfTheWholeMicrobatchBitForBit) {
  // Model::forward_backward on each microbatch's texts at once, on one thread: the router losses
  // the gradients and the loss are bit for bit the same.
  ModelConfig c = model_preset("story");
  c.vocab = 300;
  c.seq_len = 32;
  const int per = 4;
  const Batch batch = random_batch(c.vocab, 2 * per, c.seq_len, 40);
  const LossScales sc{1.f / 97, 0.5f};
  MemoryTracker mt1, mt2;
  CpuBackend one(mt1), two(mt2, 2);
  Model a(c, one, mt1, 11), b(c, two, mt2, 11);
  MicrobatchState sa;
  double ce = 0.0, aux = 0.0;
  for (int micro = 0; micro < 2; ++micro) {
    a.forward_backward(sa, texts(batch, micro * per, per), sc);
    ce += sa.ce_sum;
    aux += sa.aux_sum;
  }
  SplitStep split(b, mt2, two.pool(), per);
  const SplitStep::Losses l = split.forward_backward(batch, 2, sc);
  EXPECT_TRUE(same(aux, l.aux_sum)) << aux << " " << l.aux_sum;
  EXPECT_TRUE(same(ce, l.ce_sum)) << ce << " " << l.ce_sum;
  // Every op that sums rows into a gradient adds them in order onto what is there, so a piece
  // adding shard 0's rows and then shard 1's gives the one call's bits.
  EXPECT_EQ(std::memcmp(a.params().grads.data(), b.params().grads.data(), (std::size_t)a.params().count() * 4), 0);
  bool moved = false;
  for (std::int64_t i = 0; i < a.params().count(); ++i) moved |= a.params().grads[i] != 0.f;
  EXPECT_TRUE(moved);
}

// A batch of `micro` microbatches of 2 texts whose last text holds a token outside the
// vocabulary throws on two threads; the object is usable again, and a good batch then gives a
// fresh object's numbers.
void expect_usable_after_a_bad_batch(int micro) {
  ModelConfig c = model_preset("story");
  c.vocab = 300;
  c.seq_len = 32;
  auto make = [&](MemoryTracker& mt, CpuBackend& be) { return Model(c, be, mt, 11); };
  MemoryTracker mt, mt2;
  CpuBackend pooled(mt, 2), pooled2(mt2, 2);
  Model m = make(mt, pooled), m2 = make(mt2, pooled2);
  SplitStep split(m, mt, pooled.pool(), 2), fresh(m2, mt2, pooled2.pool(), 2);
  Batch bad = random_batch(c.vocab, 2 * micro, c.seq_len, 3);
  bad.inputs.back() = c.vocab;
  EXPECT_THROW(split.forward_backward(bad, micro, {1.f, 1.f}), Error);
  const Batch good = random_batch(c.vocab, 2 * micro, c.seq_len, 3);
  m.params().zero_grads();
  EXPECT_NO_THROW(split.forward_backward(good, micro, {1.f, 1.f}));
  fresh.forward_backward(good, micro, {1.f, 1.f});
  EXPECT_TRUE(same(std::vector<float>(m.params().grads.data(), m.params().grads.data() + m.params().count()),
                   m2.params().grads.data()));
  EXPECT_THROW(split.forward_backward(random_batch(c.vocab, 3, c.seq_len, 3), 1, {1.f, 1.f}), Error);
}

TEST(SplitStep, AFailingShardLeavesTheStepUsable) {
  expect_usable_after_a_bad_batch(1);  // the second shard's text is the bad one
}

TEST(SplitStep, AFailingMicrobatchOfAPairLeavesTheStepUsable) {
  expect_usable_after_a_bad_batch(2);  // the pair's second microbatch holds the bad text
}

}  // namespace
}  // namespace onegpu::trainer
