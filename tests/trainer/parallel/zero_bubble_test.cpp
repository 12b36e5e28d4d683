// ZB-H1 with the real model: backward is two ops, B (input gradients) and W (weight
// gradients, later). The two pieces give layer_backward's numbers bit for bit, and W is real
// work: it writes the weight gradients that B leaves alone.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/support/small_story.h"
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

const test::SmallStory& setup() { return test::small_story<32>(); }

ParallelOptions split(int dp, int ep, int pp, Schedule s) {
  ParallelOptions o;
  o.dp = dp;
  o.ep = ep;
  o.pp = pp;
  o.schedule = s;
  o.microbatches = 4;
  o.batch = 4 * dp;
  o.workers = 2;
  return o;
}

// Which gradient elements of a rank an op changed, by the kind of weight they belong to.
struct Changed {
  std::int64_t weights = 0;  // attention, router, experts: W's work
  std::int64_t norms = 0;    // norm gains: B's work (and the embedding's, head's)
};
Changed changed(const ParamStore& P, const std::vector<float>& before) {
  Changed c;
  for (const auto& t : P.tensors())
    for (std::int64_t i = t.offset; i < t.offset + t.size(); ++i) {
      if (std::memcmp(&P.grads[(std::size_t)i], &before[(std::size_t)i], sizeof(float)) == 0) continue;
      const bool weight = t.kind == ParamKind::Attention || t.kind == ParamKind::Router || t.kind == ParamKind::Expert;
      (weight ? c.weights : c.norms) += 1;
    }
  return c;
}

// The step is run op by op: each W op must add to its rank's weight gradients (attention,
// router, and the experts of rows it was sent), each B op must leave them alone. Work is
// counted in gradient elements written, not in seconds (a timing test failed under load).
TEST(ZeroBubble, WeightOpsDoRealWork) {
  for (int dpep : {1, 2}) {  // experts on the rank, and experts on other ranks
    ParallelTrainer t(setup().model, split(dpep, dpep, 2, Schedule::ZeroBubbleH1), setup().train);
    t.begin_step();
    int w_ops = 0, b_ops = 0;
    std::int64_t w_weights = 0, b_weights = 0, b_norms = 0;
    for (;;) {
      const auto next = t.engine().waiting_ops();
      if (next.empty()) break;
      const Op& op = t.plan().op(next.front());
      const bool is_w = op.kind == OpKind::BackwardWeight, is_b = op.kind == OpKind::BackwardInput;
      std::vector<float> before;
      if (is_w || is_b) before.assign(t.params(op.rank).grads.begin(), t.params(op.rank).grads.end());
      t.engine().step_one();
      if (!is_w && !is_b) continue;
      const Changed c = changed(t.params(op.rank), before);
      if (is_w) {
        ++w_ops;
        w_weights += c.weights;
        EXPECT_GT(c.weights, 0) << "W op did no weight-gradient work: " << describe(op);
      } else {
        ++b_ops;
        b_weights += c.weights;
        b_norms += c.norms;
      }
    }
    t.finish_step();
    std::printf("dp=ep=%d pp=2: %d W ops wrote %lld weight-gradient elements; %d B ops wrote %lld (and %lld others)\n",
                dpep, w_ops, (long long)w_weights, b_ops, (long long)b_weights, (long long)b_norms);
    EXPECT_GT(w_ops, 0);
    EXPECT_EQ(b_weights, 0) << "B ops wrote weight gradients: that is W's work";
    EXPECT_GT(b_norms, 0);
  }
}

TEST(ZeroBubble, SameBitsAsOneFOneBWithExpertsSplit) {
  ParallelTrainer zb(setup().model, split(2, 2, 2, Schedule::ZeroBubbleH1), setup().train);
  ParallelTrainer ofob(setup().model, split(2, 2, 2, Schedule::OneFOneB), setup().train);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(zb.step().loss, ofob.step().loss) << i;
  EXPECT_EQ(zb.master_weights(), ofob.master_weights());
}

}  // namespace
}  // namespace onegpu::trainer
