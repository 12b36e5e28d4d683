// The memory formula (trainer/memory/footprint.h) against the tracking allocator: for every
// split the parity tests run, each rank's weights, gradients and optimizer state are exactly
// what the formula says, and its activation and communication peaks are within the stated
// tolerance. The schedule's in-flight count is checked against the plan's own simulation.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/support/small_story.h"
#include "trainer/data/story_corpus.h"
#include "trainer/engine/virtual_clock.h"
#include "trainer/error.h"
#include "trainer/memory/footprint.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::trainer {
namespace {

constexpr int kSeq = 16;

const test::SmallStory& setup() { return test::small_story<kSeq>(); }

struct Split {
  int dp, ep, pp, v;
  Schedule s;
  int m;
};

// Activations: the formula counts what is kept plus one op's largest working set; measured
// peaks differ by where the router sends tokens (with ep > 1 an expert rank holds the rows it
// was sent, not its share) and by buffers briefly live together. Stated tolerance: 30%
// (measured: within 2% on pipeline stage 0, worst -27% at dp=4 ep=4).
constexpr double kActivationTolerance = 0.30;

class FootprintTest : public ::testing::TestWithParam<Split> {};

TEST_P(FootprintTest, FormulaMatchesTheAllocator) {
  const Split sp = GetParam();
  ParallelOptions o;
  o.dp = sp.dp;
  o.ep = sp.ep;
  o.pp = sp.pp;
  o.vstages = sp.v;
  o.schedule = sp.s;
  o.microbatches = sp.m;
  o.batch = sp.dp * sp.m;  // one text per microbatch
  o.workers = 2;
  o.cost = CostModel::unit();
  ParallelTrainer t(setup().model, o, setup().train);
  t.step();  // the first step has broadcasts; the second is a steady one
  t.step();

  FootprintSplit fs;
  fs.dp = sp.dp;
  fs.ep = sp.ep;
  fs.pp = sp.pp;
  fs.vstages = sp.v;
  fs.schedule = sp.s;
  fs.microbatches = sp.m;
  fs.texts_per_microbatch = 1;
  const Summary sm = summarize(t.plan(), simulate(t.plan(), CostModel::unit()));
  for (int r = 0; r < t.world(); ++r) {
    const RankFootprint f = rank_footprint(setup().model, fs, r);
    const MemoryTracker& tr = t.tracker(r);
    EXPECT_EQ(f.params, t.params(r).count()) << "rank " << r;
    EXPECT_EQ(f[MemCategory::Weights], tr.current(MemCategory::Weights)) << "rank " << r;
    EXPECT_EQ(f[MemCategory::Gradients], tr.current(MemCategory::Gradients)) << "rank " << r;
    EXPECT_EQ(f[MemCategory::Optimizer], tr.current(MemCategory::Optimizer)) << "rank " << r;
    // The schedule's in-flight chunks, as the plan itself keeps them.
    EXPECT_EQ(f.in_flight * sp.v, sm.peak_live[(std::size_t)r]) << "rank " << r;
    const double act = (double)tr.peak(MemCategory::Activations), comm = (double)tr.peak(MemCategory::Communication);
    const double fa = (double)f[MemCategory::Activations], fc = (double)f[MemCategory::Communication];
    std::printf("dp%d ep%d pp%d v%d %s rank %d: activations formula %.0f measured %.0f (%+.1f%%), "
                "communication formula %.0f measured %.0f\n",
                sp.dp, sp.ep, sp.pp, sp.v, std::string(to_string(sp.s)).c_str(), r, fa, act, 100.0 * (fa / act - 1.0),
                fc, comm);
    EXPECT_NEAR(fa / act, 1.0, kActivationTolerance) << "rank " << r;
    // Communication: the largest buffer the formula names is really allocated, and the
    // measured peak is at most four of it (eager sends waiting for their receive together).
    EXPECT_LE(fc, comm) << "rank " << r;
    EXPECT_LE(comm, 4.0 * fc) << "rank " << r;
    if (sp.pp == 1) {
      EXPECT_EQ(fc, comm) << "rank " << r;  // one collective buffer at a time
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Splits, FootprintTest,
    ::testing::Values(Split{1, 1, 1, 1, Schedule::OneFOneB, 1}, Split{2, 1, 1, 1, Schedule::OneFOneB, 1},
                      Split{4, 1, 1, 1, Schedule::OneFOneB, 1}, Split{2, 2, 1, 1, Schedule::OneFOneB, 1},
                      Split{4, 4, 1, 1, Schedule::OneFOneB, 1}, Split{1, 1, 2, 1, Schedule::OneFOneB, 4},
                      Split{1, 1, 4, 1, Schedule::OneFOneB, 4}, Split{1, 1, 2, 1, Schedule::GPipe, 4},
                      Split{1, 1, 2, 2, Schedule::Interleaved, 4}, Split{1, 1, 4, 1, Schedule::ZeroBubbleH1, 4},
                      Split{2, 2, 2, 1, Schedule::OneFOneB, 2}, Split{2, 2, 2, 1, Schedule::ZeroBubbleH1, 2}),
    [](const ::testing::TestParamInfo<Split>& i) {
      const Split& s = i.param;
      return "dp" + std::to_string(s.dp) + "ep" + std::to_string(s.ep) + "pp" + std::to_string(s.pp) + "v" +
             std::to_string(s.v) + std::string(s.s == Schedule::GPipe ? "gpipe"
                                               : s.s == Schedule::Interleaved ? "interleaved"
                                               : s.s == Schedule::ZeroBubbleH1 ? "zb1" : "1f1b") +
             "m" + std::to_string(s.m);
    });

TEST(Footprint, ZeroDividesTheOptimizerStateOverTheCopies) {
  // story: 4 layers, 16 experts; dp=4 ep=2: dense weights over 4 copies, experts over 2.
  const ModelConfig& m = setup().model;
  FootprintSplit s;
  s.dp = 4;
  s.ep = 2;
  const RankFootprint z0 = rank_footprint(m, s, 1);
  s.zero = 1;
  const RankFootprint z1 = rank_footprint(m, s, 1);
  EXPECT_EQ(z1[MemCategory::Weights], z0[MemCategory::Weights]);
  EXPECT_EQ(z1[MemCategory::Gradients], z0[MemCategory::Gradients]);
  // Rank 1 (dp index 1, expert group 0): its piece of each group.
  EXPECT_EQ(z1[MemCategory::Optimizer],
            12 * (shard_size(z0.dense_params, 4, 1) + shard_size(z0.expert_params, 2, 0)));
  EXPECT_LT(z1[MemCategory::Optimizer], z0[MemCategory::Optimizer] / 2);
  s.zero = 3;
  const RankFootprint z3 = rank_footprint(m, s, 1);
  EXPECT_EQ(z3.params_bytes(), 18 * (shard_size(z0.dense_params, 4, 1) + shard_size(z0.expert_params, 2, 0)));
  s.zero = 4;
  EXPECT_THROW(rank_footprint(m, s, 1), Error);
}

TEST(Footprint, ShardsCoverTheGroupOnce) {
  for (std::int64_t n : {0, 1, 7, 1000003})
    for (int d : {1, 2, 3, 8, 64}) {
      std::int64_t total = 0;
      for (int i = 0; i < d; ++i) {
        EXPECT_EQ(shard_begin(n, d, i), total);
        total += shard_size(n, d, i);
      }
      EXPECT_EQ(total, n);
    }
}

}  // namespace
}  // namespace onegpu::trainer
