// ZB-H1 with the real model: backward is two ops, B (input gradients) and W (weight
// gradients, later). The two pieces give layer_backward's numbers bit for bit, and W is real
// work on the measured clock, not an empty op.
#include <gtest/gtest.h>

#include <cstring>

#include "trainer/data/story_corpus.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::trainer {
namespace {

Batch tiny_batch(int vocab, int B, int S) {
  Batch b;
  b.B = B;
  b.S = S;
  Rng rng(7);
  for (int i = 0; i < B * S; ++i) {
    b.inputs.push_back((std::int32_t)(rng.next() % (std::uint64_t)vocab));
    b.targets.push_back((std::int32_t)(rng.next() % (std::uint64_t)vocab));
  }
  return b;
}

TEST(ZeroBubble, InputThenWeightPiecesEqualWholeBackward) {
  ModelConfig c = model_preset("story");
  c.vocab = 300;
  c.seq_len = 16;
  MemoryTracker mt1, mt2;
  CpuBackend be1(mt1), be2(mt2);
  Model a(c, be1, mt1, 3), b(c, be2, mt2, 3);
  const Batch batch = tiny_batch(c.vocab, 2, 16);
  const LossScales sc{1.f / 32, 1.f};
  MicrobatchState sa, sb;
  for (Model* m : {&a, &b}) {
    MicrobatchState& st = m == &a ? sa : sb;
    m->begin(st, batch);
    m->embed_forward(st);
    for (int l = 0; l < c.n_layers; ++l) m->layer_forward(l, st);
    m->head_forward(st, true, sc);
  }
  for (int l = c.n_layers - 1; l >= 0; --l) a.layer_backward(l, sa, sc);
  for (int l = c.n_layers - 1; l >= 0; --l) b.layer_backward_input(l, sb, sc);
  // The gradient reaching the embedding is complete before any W ran.
  ASSERT_EQ(sa.dx.size(), sb.dx.size());
  EXPECT_EQ(std::memcmp(sa.dx.data(), sb.dx.data(), sa.dx.size() * sizeof(float)), 0);
  // Before W the attention weights have no gradient yet; after it, all equal bit for bit.
  const std::int64_t wo = b.params().layer_offset(0) + b.params().layer_layout().wo;
  EXPECT_EQ(b.params().grads[(std::size_t)wo], 0.f);
  for (int l = 0; l < c.n_layers; ++l) b.layer_backward_weight(l, sb);
  EXPECT_THROW(b.layer_backward_weight(0, sb), Error);  // once only
  ASSERT_EQ(a.params().count(), b.params().count());
  EXPECT_EQ(std::memcmp(a.params().grads.data(), b.params().grads.data(), (std::size_t)a.params().count() * sizeof(float)),
            0);
}

TEST(ZeroBubble, WeightOpsDoRealWork) {
  StoryCorpusOptions co;
  co.target_bytes = std::size_t{64} << 10;
  Corpus corpus = generate_story_corpus(co);
  BpeTokenizer tok = BpeTokenizer::train(corpus.train);
  TokenDataset data = TokenDataset::build(tok, corpus.train);
  ModelConfig m = model_preset("story");
  m.vocab = (int)tok.vocab_size();
  ParallelOptions o;
  o.pp = 2;
  o.schedule = Schedule::ZeroBubbleH1;
  o.microbatches = 4;
  o.batch = 8;
  o.workers = 2;
  ParallelTrainer t(m, o, data);
  t.step();
  double b = 0, w = 0;
  for (const Op& op : t.plan().ops) {
    const double s = t.timeline().ops[op.id].measured_s;
    if (op.kind == OpKind::BackwardInput) b += s;
    if (op.kind == OpKind::BackwardWeight) w += s;
  }
  std::printf("measured: B %.2f ms, W %.2f ms in all\n", b * 1e3, w * 1e3);
  EXPECT_GT(w, 0.2 * b);  // W holds the weight-gradient matmuls: a real share of backward
}

}  // namespace
}  // namespace onegpu::trainer
