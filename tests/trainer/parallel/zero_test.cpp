// ZeRO-1 (ParallelOptions::zero = 1): the same run with and without it gives bitwise the same
// losses, gradient norms and weights on the parity tests' splits (the reduce-scatter sums each
// weight's gradients in the all-reduce's order, the update is element-wise); each rank's
// allocator holds its piece of the optimizer state, as the memory formula says; the plan
// reduce-scatters and all-gathers instead of all-reducing, at a cost on the virtual clock.
#include <gtest/gtest.h>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/support/small_story.h"
#include "tests/support/temp_dir.h"
#include "trainer/data/story_corpus.h"
#include "trainer/engine/virtual_clock.h"
#include "trainer/error.h"
#include "trainer/memory/footprint.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::trainer {
namespace {

constexpr int kSteps = 5;
constexpr int kBatch = 8;
constexpr int kSeq = 16;

const test::SmallStory& setup() { return test::small_story<kSeq>(); }

struct Split {
  int dp, ep, pp, v;
  Schedule s;
};

ParallelOptions options(const Split& sp, int zero) {
  ParallelOptions o;
  o.dp = sp.dp;
  o.ep = sp.ep;
  o.pp = sp.pp;
  o.vstages = sp.v;
  o.schedule = sp.s;
  o.batch = kBatch;
  o.microbatches = kBatch / sp.dp;
  o.steps = 100;
  o.optim.warmup_steps = 2;  // so the weights really move in a few steps
  o.workers = 2;
  o.cost = CostModel::unit();
  o.zero = zero;
  return o;
}

struct RunRecord {
  std::vector<double> losses, norms;
  std::vector<float> master;
  bool agree = false;
  std::vector<std::int64_t> optimizer;  // per rank, bytes
};

RunRecord train(const Split& sp, int zero) {
  ParallelTrainer t(setup().model, options(sp, zero), setup().train);
  RunRecord r;
  for (int i = 0; i < kSteps; ++i) {
    const ParallelStepResult s = t.step();
    r.losses.push_back(s.loss);
    r.norms.push_back(s.grad_norm);
  }
  r.master = t.master_weights();
  r.agree = t.replicas_agree();
  for (int k = 0; k < t.world(); ++k) r.optimizer.push_back(t.tracker(k).current(MemCategory::Optimizer));
  return r;
}

class ZeroTest : public ::testing::TestWithParam<Split> {};

TEST_P(ZeroTest, BitwiseTheUnshardedRunWithTheOptimizerStateSplit) {
  const Split sp = GetParam();
  const RunRecord a = train(sp, 0), b = train(sp, 1);
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (std::size_t i = 0; i < a.losses.size(); ++i) {
    EXPECT_EQ(a.losses[i], b.losses[i]) << "step " << i;  // bitwise: no tolerance
    EXPECT_EQ(a.norms[i], b.norms[i]) << "step " << i;
  }
  ASSERT_EQ(a.master.size(), b.master.size());
  EXPECT_EQ(std::memcmp(a.master.data(), b.master.data(), a.master.size() * sizeof(float)), 0);
  EXPECT_TRUE(a.agree);
  EXPECT_TRUE(b.agree);
  std::printf("dp%d ep%d pp%d v%d: grad norms %.3f .. %.3f (clipping at 1 %s); optimizer bytes rank 0: %lld -> %lld\n",
              sp.dp, sp.ep, sp.pp, sp.v, a.norms.front(), a.norms.back(),
              a.norms.front() > 1.0 ? "active" : "inactive", (long long)a.optimizer[0], (long long)b.optimizer[0]);
  // Each rank holds its pieces: exactly what the memory formula says, the unsharded state
  // divided by the number of copies (dense over dp, experts over dp/ep, up to rounding).
  FootprintSplit fs;
  fs.dp = sp.dp;
  fs.ep = sp.ep;
  fs.pp = sp.pp;
  fs.vstages = sp.v;
  fs.schedule = sp.s;
  fs.microbatches = kBatch / sp.dp;
  for (int r = 0; r < (int)b.optimizer.size(); ++r) {
    fs.zero = 1;
    const RankFootprint f1 = rank_footprint(setup().model, fs, r);
    fs.zero = 0;
    const RankFootprint f0 = rank_footprint(setup().model, fs, r);
    EXPECT_EQ(a.optimizer[r], f0[MemCategory::Optimizer]) << "rank " << r;
    EXPECT_EQ(b.optimizer[r], f1[MemCategory::Optimizer]) << "rank " << r;
    const double expected = 12.0 * ((double)f0.dense_params / sp.dp + (double)f0.expert_params / (sp.dp / sp.ep));
    EXPECT_NEAR((double)b.optimizer[r], expected, 12.0 * 2 * sp.v) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Splits, ZeroTest,
    ::testing::Values(Split{2, 1, 1, 1, Schedule::OneFOneB}, Split{4, 1, 1, 1, Schedule::OneFOneB},
                      Split{2, 2, 1, 1, Schedule::OneFOneB}, Split{4, 2, 1, 1, Schedule::OneFOneB},
                      Split{2, 1, 2, 1, Schedule::GPipe}, Split{2, 1, 2, 2, Schedule::Interleaved},
                      Split{2, 2, 2, 1, Schedule::OneFOneB}, Split{2, 2, 2, 1, Schedule::ZeroBubbleH1},
                      Split{1, 1, 2, 1, Schedule::OneFOneB}),  // dp = 1: nothing to split
    [](const ::testing::TestParamInfo<Split>& i) {
      const Split& s = i.param;
      return "dp" + std::to_string(s.dp) + "ep" + std::to_string(s.ep) + "pp" + std::to_string(s.pp) + "v" +
             std::to_string(s.v) + std::string(s.s == Schedule::GPipe ? "gpipe"
                                               : s.s == Schedule::Interleaved ? "interleaved"
                                               : s.s == Schedule::ZeroBubbleH1 ? "zb1" : "1f1b");
    });

TEST(Zero, PlanReduceScattersAndAllGathersOnTheVirtualClock) {
  RunConfig c;
  c.dp = 4;
  c.ep = 2;
  c.zero = 1;
  c.sizes.dense_params_per_layer = 1000;
  c.sizes.params_per_expert = 500;
  const Plan first = compile_plan(c, PlanOptions{.broadcast_model = true}), steady = compile_plan(c);
  int rs = 0, ag = 0, ar = 0;
  for (const Op& op : steady.ops) {
    rs += op.kind == OpKind::ReduceScatter;
    ag += op.kind == OpKind::AllGather;
    ar += op.kind == OpKind::AllReduce;
  }
  // Every rank: one reduce-scatter and one all-gather a group (dense over 4, expert over 2).
  EXPECT_EQ(rs, 8);
  EXPECT_EQ(ag, 8);
  EXPECT_EQ(ar, 0);
  // The first step's broadcast brings the weights: no all-gather there.
  for (const Op& op : first.ops) EXPECT_NE(op.kind, OpKind::AllGather);
  // The all-gather opens each program; the reduce-scatter comes after the last backward.
  for (int r = 0; r < steady.world(); ++r) EXPECT_EQ(steady.op(steady.programs[r].front()).kind, OpKind::AllGather);
  // On NVLink, a reduce-scatter costs one ring phase: half an all-reduce of the same buffer.
  CostModel cm;
  for (const Collective& col : steady.collectives) {
    if (col.kind != OpKind::ReduceScatter) continue;
    Collective as_ar = col;
    as_ar.kind = OpKind::AllReduce;
    EXPECT_GT(cm.collective_cost(col), 0.0);
    EXPECT_NEAR(cm.collective_cost(col), 0.5 * cm.collective_cost(as_ar), 1e-15);
    EXPECT_EQ(col.bytes % 4, 0);  // fp32 gradients
  }
  EXPECT_NO_THROW(simulate(steady, cm));
  c.zero = 2;
  EXPECT_THROW(compile_plan(c), Error);
}

}  // namespace
}  // namespace onegpu::trainer

namespace onegpu::trainer {
namespace {

// Checkpoints are written unsharded: a run saved with ZeRO-1 resumes without it and the
// reverse, and both go on bitwise as the run that never stopped.
TEST(Zero, CheckpointsSavedShardedLoadUnshardedAndTheReverse) {
  const Split sp{2, 2, 1, 1, Schedule::OneFOneB};
  std::vector<double> whole;
  {
    ParallelTrainer t(setup().model, options(sp, 0), setup().train);
    for (int i = 0; i < kSteps; ++i) whole.push_back(t.step().loss);
  }
  const std::vector<float> whole_master = [&] {
    ParallelTrainer t(setup().model, options(sp, 0), setup().train);
    for (int i = 0; i < kSteps; ++i) t.step();
    return t.master_weights();
  }();
  const onegpu::trainer::testing::TempDir dir;
  const std::string path = dir.file("zero_test.ckpt");
  for (int saved_zero : {1, 0}) {
    {
      ParallelTrainer t(setup().model, options(sp, saved_zero), setup().train);
      for (int i = 0; i < 3; ++i) EXPECT_EQ(t.step().loss, whole[i]);
      t.save(path);
    }
    ParallelTrainer t(setup().model, options(sp, 1 - saved_zero), setup().train);
    t.load(path);
    EXPECT_EQ(t.steps_done(), 3);
    for (int i = 3; i < kSteps; ++i) EXPECT_EQ(t.step().loss, whole[i]) << "saved with zero " << saved_zero << ", step " << i;
    const std::vector<float> m = t.master_weights();
    ASSERT_EQ(m.size(), whole_master.size());
    EXPECT_EQ(std::memcmp(m.data(), whole_master.data(), m.size() * sizeof(float)), 0) << "saved with zero " << saved_zero;
    EXPECT_TRUE(t.replicas_agree());
  }
  // Another model's checkpoint is refused in one line.
  ModelConfig other = setup().model;
  other.n_layers = 2;
  ParallelTrainer t(other, options(Split{2, 2, 1, 1, Schedule::OneFOneB}, 1), setup().train);
  EXPECT_THROW(t.load(path), Error);
}

// The state in memory (state_into / set_state, the Lab's branches): taken from a run after 3
// steps, it carries the run on bitwise under the same split (with or without ZeRO-1), and into
// another split whole: that run's master weights are the state's, bit for bit, and it trains on
// from step 3 to losses within summation order of the run that never stopped.
TEST(Zero, StateInMemoryCarriesARunOnUnderAnySplit) {
  const Split sp{2, 2, 1, 1, Schedule::OneFOneB};
  std::vector<double> whole;
  std::vector<float> whole_master;
  {
    ParallelTrainer t(setup().model, options(sp, 0), setup().train);
    for (int i = 0; i < kSteps; ++i) whole.push_back(t.step().loss);
    whole_master = t.master_weights();
  }
  ParallelTrainer::State s;
  {
    ParallelTrainer t(setup().model, options(sp, 1), setup().train);
    for (int i = 0; i < 3; ++i) t.step();
    t.begin_step();
    EXPECT_THROW(t.state_into(s), Error);  // not during a step
    t.finish_step();
    ParallelTrainer u(setup().model, options(sp, 1), setup().train);
    for (int i = 0; i < 3; ++i) u.step();
    u.state_into(s);
    const std::vector<float> first(s.master);
    u.state_into(s);  // again into the same arrays: the same state
    EXPECT_EQ(s.master, first);
  }
  EXPECT_EQ(s.step, 3);
  for (int zero : {0, 1}) {
    ParallelTrainer t(setup().model, options(sp, zero), setup().train);
    t.step();  // a run that has trained already takes it too
    t.set_state(s);
    EXPECT_EQ(t.steps_done(), 3);
    for (int i = 3; i < kSteps; ++i) EXPECT_EQ(t.step().loss, whole[i]) << "zero " << zero << ", step " << i;
    const std::vector<float> m = t.master_weights();
    ASSERT_EQ(m.size(), whole_master.size());
    EXPECT_EQ(std::memcmp(m.data(), whole_master.data(), m.size() * sizeof(float)), 0) << "zero " << zero;
    EXPECT_TRUE(t.replicas_agree());
  }
  for (const Split& other : {Split{1, 1, 2, 1, Schedule::GPipe}, Split{4, 4, 2, 1, Schedule::OneFOneB}}) {
    ParallelTrainer t(setup().model, options(other, 0), setup().train);
    t.set_state(s);
    const std::vector<float> m = t.master_weights();
    ASSERT_EQ(m.size(), s.master.size());
    EXPECT_EQ(std::memcmp(m.data(), s.master.data(), m.size() * sizeof(float)), 0) << "dp " << other.dp << " pp " << other.pp;
    EXPECT_TRUE(t.replicas_agree());
    for (int i = 3; i < kSteps; ++i) EXPECT_NEAR(t.step().loss, whole[i], 1e-4 * whole[i]) << "dp " << other.dp << ", step " << i;
  }
  // Another model's state is refused in one line.
  ModelConfig other = setup().model;
  other.n_layers = 2;
  ParallelTrainer t(other, options(sp, 0), setup().train);
  EXPECT_THROW(t.set_state(s), Error);
}

}  // namespace
}  // namespace onegpu::trainer
