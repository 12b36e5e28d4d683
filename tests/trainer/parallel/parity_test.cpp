// The story model trained on one rank and split every way the storyboard shows (dp, ep, pp,
// interleaved, zero-bubble, GPipe and 1F1B, and all three at once) gives the same losses and
// the same final weights, up to float summation order (stated below).
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "trainer/data/story_corpus.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/train/trainer.h"

namespace onegpu::trainer {
namespace {

constexpr int kSteps = 5;
constexpr int kBatch = 8;  // global batch: one text per microbatch on every split
constexpr int kSeq = 16;

struct Data {
  Corpus corpus;
  BpeTokenizer tok;
  TokenDataset train;
  ModelConfig model;
};

const Data& data() {
  static const Data d = [] {
    StoryCorpusOptions co;
    co.target_bytes = std::size_t{96} << 10;
    Data x{generate_story_corpus(co), {}, {}, model_preset("story")};
    x.tok = BpeTokenizer::train(x.corpus.train);
    x.train = TokenDataset::build(x.tok, x.corpus.train);
    x.model.vocab = (int)x.tok.vocab_size();
    x.model.seq_len = kSeq;
    return x;
  }();
  return d;
}

AdamWConfig optim() {
  AdamWConfig o;
  o.warmup_steps = 2;  // so the weights really move in a few steps
  return o;
}

struct RunResult {
  std::vector<double> losses;
  std::vector<float> master;
  bool replicas_agree = false;
  double seconds = 0;
};

RunResult train(int dp, int ep, int pp, int v, Schedule s, bool separate_first_copy = false) {
  ParallelOptions o;
  o.separate_first_copy = separate_first_copy;
  o.dp = dp;
  o.ep = ep;
  o.pp = pp;
  o.vstages = v;
  o.schedule = s;
  o.batch = kBatch;
  o.microbatches = kBatch / dp;
  o.steps = 100;
  o.optim = optim();
  o.workers = 2;
  o.cost = CostModel::unit();
  ParallelTrainer t(data().model, o, data().train);
  RunResult r;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kSteps; ++i) r.losses.push_back(t.step().loss);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.master = t.master_weights();
  r.replicas_agree = t.replicas_agree();
  return r;
}

const RunResult& reference() {
  static const RunResult r = train(1, 1, 1, 1, Schedule::OneFOneB);
  return r;
}

double max_rel_loss(const RunResult& a, const RunResult& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.losses.size(); ++i)
    m = std::max(m, std::abs(a.losses[i] - b.losses[i]) / std::abs(b.losses[i]));
  return m;
}
// Largest weight difference, relative to the largest weight (weights are O(0.1..1)).
double max_rel_weight(const RunResult& a, const RunResult& b) {
  double d = 0, big = 0;
  for (std::size_t i = 0; i < a.master.size(); ++i) {
    d = std::max(d, (double)std::abs(a.master[i] - b.master[i]));
    big = std::max(big, (double)std::abs(b.master[i]));
  }
  return d / big;
}

// Tolerances. A pipeline split runs the same ops on the same numbers in the same order per
// weight, so it is bitwise equal to one rank (tested with 0). Data and expert parallel splits
// sum a weight's gradient in another order: per rank over its microbatches, then over ranks in
// rank order (one rank: over all microbatches in a row); expert rows arrive grouped by the
// rank that sent them. Rounding of those sums is all that differs. Measured over kSteps = 5
// steps: losses within 3e-7 relative, final master weights within 6e-6 of the largest weight
// (median difference ~1e-8). Adam divides by sqrt(v), so a rounding-level difference on a
// gradient that nearly cancels becomes a visible step difference: weights get a looser bound.
// Over more steps the differences grow: training is chaotic, and once a token's top-k choice
// sits on a near tie, rounding flips it (measured: dp=2 ep=2 jumps from 1e-8 to 5e-4 relative
// at step 7 of 8). LongerRunStaysClose states what holds over 20 steps.
constexpr double kLossTol = 1e-5;
constexpr double kWeightTol = 2e-5;

TEST(ParallelParity, OneRankRunnerMatchesTheTrainer) {
  TrainOptions to;
  to.steps = 100;
  to.batch = kBatch;
  to.microbatches = kBatch;
  to.seed = 1;
  to.optim = optim();
  Trainer t(data().model, to, data().tok, data().corpus);
  std::vector<double> losses;
  for (int i = 0; i < kSteps; ++i) losses.push_back(t.step().loss);
  const RunResult& ref = reference();
  for (int i = 0; i < kSteps; ++i) EXPECT_NEAR(losses[(std::size_t)i], ref.losses[(std::size_t)i], 1e-6 * losses[(std::size_t)i]) << i;
  const auto& P = t.model().params();
  ASSERT_EQ((std::int64_t)ref.master.size(), P.count());
  double d = 0;
  for (std::int64_t i = 0; i < P.count(); ++i) d = std::max(d, (double)std::abs(P.master[i] - ref.master[(std::size_t)i]));
  EXPECT_LT(d, 1e-5);
  EXPECT_LT(ref.losses.back(), ref.losses.front());  // it learns
}

struct Split {
  int dp, ep, pp, v;
  Schedule s;
};

class Splits : public ::testing::TestWithParam<Split> {};

TEST_P(Splits, SameLossesAndWeightsAsOneRank) {
  const Split sp = GetParam();
  const RunResult& ref = reference();
  const RunResult r = train(sp.dp, sp.ep, sp.pp, sp.v, sp.s);
  const double lr = max_rel_loss(r, ref), wr = max_rel_weight(r, ref);
  std::printf("dp=%d ep=%d pp=%d v=%d %s: loss rel %.2e, weights rel %.2e, %.2f s (1 rank %.2f s)\n", sp.dp, sp.ep,
              sp.pp, sp.v, std::string(to_string(sp.s)).c_str(), lr, wr, r.seconds, ref.seconds);
  if (std::getenv("PARITY_VERBOSE")) {
    for (int i = 0; i < kSteps; ++i) std::printf("  step %d: %.9f vs %.9f\n", i, r.losses[(std::size_t)i], ref.losses[(std::size_t)i]);
    std::vector<double> d;
    for (std::size_t i = 0; i < r.master.size(); ++i) d.push_back(std::abs(r.master[i] - ref.master[i]));
    std::sort(d.begin(), d.end());
    std::printf("  weight diffs: median %.2e, 99.9%% %.2e, max %.2e\n", d[d.size() / 2], d[d.size() * 999 / 1000], d.back());
  }
  EXPECT_TRUE(r.replicas_agree) << "copies of a weight on different ranks differ";
  EXPECT_LE(lr, kLossTol);
  EXPECT_LE(wr, kWeightTol);
  ASSERT_EQ(r.master.size(), ref.master.size());
}

INSTANTIATE_TEST_SUITE_P(
    Story, Splits,
    ::testing::Values(Split{2, 1, 1, 1, Schedule::OneFOneB}, Split{4, 1, 1, 1, Schedule::OneFOneB},
                      Split{2, 2, 1, 1, Schedule::OneFOneB}, Split{4, 4, 1, 1, Schedule::OneFOneB},
                      Split{1, 1, 2, 1, Schedule::OneFOneB}, Split{1, 1, 4, 1, Schedule::OneFOneB},
                      Split{1, 1, 2, 1, Schedule::GPipe}, Split{1, 1, 2, 2, Schedule::Interleaved},
                      Split{1, 1, 4, 1, Schedule::ZeroBubbleH1}, Split{2, 2, 2, 1, Schedule::OneFOneB},
                      Split{2, 2, 2, 1, Schedule::ZeroBubbleH1}),
    [](const auto& info) {
      const Split& s = info.param;
      return "dp" + std::to_string(s.dp) + "ep" + std::to_string(s.ep) + "pp" + std::to_string(s.pp) + "v" +
             std::to_string(s.v) + "_" + (s.s == Schedule::ZeroBubbleH1 ? std::string("zb1") : s.s == Schedule::OneFOneB ? std::string("onefoneb") : std::string(to_string(s.s)));
    });

TEST(ParallelParity, GPipeAndOneFOneBAgreeWithEachOther) {
  const RunResult a = train(1, 1, 2, 1, Schedule::GPipe);
  const RunResult b = train(1, 1, 2, 1, Schedule::OneFOneB);
  // Same ops on the same ranks in a different order: gradients accumulate per microbatch in
  // the same order on each rank, so the runs are bitwise equal.
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.master, b.master);
}

TEST(ParallelParity, SameSplitTwiceIsBitwiseEqual) {
  const RunResult a = train(2, 2, 2, 1, Schedule::OneFOneB);
  const RunResult b = train(2, 2, 2, 1, Schedule::OneFOneB);
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.master, b.master);
}

// Copies that keep arrays of their own through the first step (the copy chapter) and then share
// the owner's compute the same bits as copies that share from set-up; and the first step's
// broadcasts really fill the second copy, which starts empty.
TEST(ParallelParity, SeparateFirstCopyIsBitwiseSharedReplicas) {
  const RunResult shared = train(2, 1, 1, 1, Schedule::OneFOneB);
  const RunResult separate = train(2, 1, 1, 1, Schedule::OneFOneB, true);
  EXPECT_EQ(shared.losses, separate.losses);
  EXPECT_EQ(shared.master, separate.master);
  EXPECT_TRUE(separate.replicas_agree);

  ParallelOptions o;
  o.dp = 2;
  o.batch = kBatch;
  o.microbatches = kBatch / 2;
  o.optim = optim();
  o.workers = 1;
  o.separate_first_copy = true;
  ParallelTrainer t(data().model, o, data().train);
  const ParamStore& second = t.params(1);
  const float* before = second.master.data();
  EXPECT_TRUE(std::all_of(before, before + second.count(), [](float x) { return x == 0.f; }));
  t.step();
  EXPECT_FALSE(std::all_of(second.master.data(), second.master.data() + second.count(), [](float x) { return x == 0.f; }));
  EXPECT_NE(t.params(0).master.data(), t.params(1).master.data());  // its own arrays, compared below
  EXPECT_TRUE(t.replicas_agree());
  t.step();
  EXPECT_EQ(t.params(0).master.data(), t.params(1).master.data());  // shared from the second step
}

// With experts split (ep > 1) and shared replicas, an expert group's gradients are summed from
// its members' rows at the all-reduce, the other members' never written (parallel_trainer.cpp,
// defer_expert_grads); copies that keep arrays of their own through the first step sum
// every member's own gradients as before. Both give the same bits, step after step (each step
// must start the owners' sums from zero again), and the other members' expert gradients stay
// zero pages while their dense ones are written.
TEST(ParallelParity, ExpertSumsFromRowsAreBitwiseEachMembersOwnGradients) {
  for (Schedule s : {Schedule::OneFOneB, Schedule::ZeroBubbleH1}) {
    const RunResult from_rows = train(4, 2, 2, 1, s);
    const RunResult own = train(4, 2, 2, 1, s, true);
    EXPECT_EQ(from_rows.losses, own.losses) << to_string(s);
    EXPECT_EQ(from_rows.master, own.master) << to_string(s);
    EXPECT_TRUE(from_rows.replicas_agree);
  }

  ParallelOptions o;
  o.dp = 4;
  o.ep = 2;
  o.pp = 2;
  o.batch = kBatch;
  o.microbatches = kBatch / 4;
  o.optim = optim();
  o.workers = 2;
  ParallelTrainer t(data().model, o, data().train);
  for (int step = 0; step < 2; ++step) t.step();
  // Before anything reads them: the other members' expert gradients were never brought in
  // (set-up writes every range a step writes once, and no more; mincore: pages in memory),
  // while the owners' were.
  const long page = ::sysconf(_SC_PAGESIZE);
  for (int r = 0; r < t.world(); ++r) {
    const ParamStore& P = t.params(r);
    long in = 0, whole = 0;
    for (const auto& tn : P.tensors()) {
      if (tn.kind != ParamKind::Expert) continue;
      const auto a = ((std::uintptr_t)(P.grads.data() + tn.offset) + page - 1) / page * page;
      const auto b = (std::uintptr_t)(P.grads.data() + tn.offset + tn.size()) / page * page;
      if (b <= a) continue;
      std::vector<unsigned char> v((b - a) / page);
      ASSERT_EQ(::mincore((void*)a, b - a, v.data()), 0);
      for (unsigned char c : v) in += c & 1;
      whole += (long)v.size();
    }
    const bool owner = t.plan().layout.expert_group(r).front() == r;
    ASSERT_GT(whole, 0) << "rank " << r;
    if (owner)
      EXPECT_EQ(in, whole) << "rank " << r;
    else
      EXPECT_EQ(in, 0) << "rank " << r << ": expert gradient pages brought in that no step writes";
  }
  int owners = 0, others = 0;
  for (int r = 0; r < t.world(); ++r) {
    const ParamStore& P = t.params(r);
    bool expert_written = false, dense_written = false;
    for (const auto& tn : P.tensors()) {
      const bool any = std::any_of(P.grads.data() + tn.offset, P.grads.data() + tn.offset + tn.size(), [](float g) { return g != 0.f; });
      (tn.kind == ParamKind::Expert ? expert_written : dense_written) |= any;
    }
    const bool owner = t.plan().layout.expert_group(r).front() == r;
    (owner ? owners : others) += 1;
    EXPECT_EQ(expert_written, owner) << "rank " << r;
    EXPECT_TRUE(dense_written) << "rank " << r;
  }
  EXPECT_GT(owners, 0);
  EXPECT_GT(others, 0);
}

TEST(ParallelParity, LongerRunStaysClose) {
  // 20 steps of pp=2 × dp=2 × ep=2 against one rank: the same run, not the same bits.
  auto losses = [](int dp, int ep, int pp) {
    ParallelOptions o;
    o.dp = dp;
    o.ep = ep;
    o.pp = pp;
    o.batch = kBatch;
    o.microbatches = kBatch / dp;
    o.steps = 100;
    o.optim = optim();
    o.workers = 2;
    ParallelTrainer t(data().model, o, data().train);
    std::vector<double> l;
    for (int i = 0; i < 20; ++i) l.push_back(t.step().loss);
    return l;
  };
  const auto a = losses(1, 1, 1), b = losses(2, 2, 2);
  double worst = 0;
  for (int i = 0; i < 20; ++i) worst = std::max(worst, std::abs(a[(std::size_t)i] - b[(std::size_t)i]) / a[(std::size_t)i]);
  std::printf("20 steps, pp=2 dp=2 ep=2 vs 1 rank: largest loss difference %.2e relative; loss %.3f -> %.3f\n", worst,
              a.front(), a.back());
  EXPECT_LT(worst, 1e-2);
  EXPECT_LT(a.back(), a.front() - 1.0);  // and it trains
}

}  // namespace
}  // namespace onegpu::trainer
