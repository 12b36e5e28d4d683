// The data- and expert-parallel chapters' recorded runs (app/run/recorded_run.h): a recorded
// step holds every op of its plan once per rank, and what the chapters draw (dp_step, dp_copy,
// ep_traffic, model_memory) is read from the run state's record, number for number.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "app/run/dp_copy.h"
#include "app/run/dp_drift.h"
#include "app/run/dp_step.h"
#include "app/run/ep_traffic.h"
#include "app/run/model_memory.h"
#include "app/run/recorded_run.h"
#include "app/run/story_run.h"
#include "trainer/train/dataset.h"

using namespace onegpu;
using namespace onegpu::app;
using trainer::EventKind;
using trainer::OpKind;

namespace {

trainer::ModelConfig story_model() {
  trainer::ModelConfig m = trainer::model_preset("story");
  m.vocab = static_cast<int>(StoryRun::get().tokenizer().vocab_size());
  return m;
}

// Ops per (rank, kind) of a recorded step, and the same from its plan.
std::map<std::pair<int, int>, int> ran(const RunStep& s) {
  std::map<std::pair<int, int>, int> n;
  for (const OpSpan& op : s.ops) ++n[{op.rank, static_cast<int>(op.kind)}];
  return n;
}

}  // namespace

TEST(RecordedRun, AStepOfTwoRanksWithExpertsSplitHasThePlansOpsPerRankAndKind) {
  StoryRun& story = StoryRun::get();
  const trainer::TokenDataset data = trainer::TokenDataset::build(story.tokenizer(), story.sliver().train);
  trainer::ParallelOptions o;
  o.dp = 2;
  o.ep = 2;
  o.batch = 4;
  o.workers = 2;
  o.broadcast_first_step = true;
  const RecordedRun r = record_run(story_model(), o, data, story.tray_batch(), 2);
  for (int step : {0, 1}) {
    const RunStep* s = r.state.find(step);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->complete);
    EXPECT_TRUE(s->spans_whole) << step;
    const trainer::Plan& plan = r.run->plan_of(step);
    EXPECT_EQ(s->ops.size(), plan.ops.size()) << step;
    std::map<std::pair<int, int>, int> planned;
    int compute = 0;
    for (const trainer::Op& op : plan.ops) {
      compute += op.kind == OpKind::Forward || op.kind == OpKind::Backward;
      ++planned[{op.rank, -1}];
    }
    std::map<std::pair<int, int>, int> per_rank;
    int ran_compute = 0;
    for (const auto& [key, n] : ran(*s)) {
      per_rank[{key.first, -1}] += n;
      if (key.second == (int)EventKind::Forward || key.second == (int)EventKind::Backward) ran_compute += n;
    }
    EXPECT_EQ(per_rank, planned) << step;
    EXPECT_EQ(ran_compute, compute) << step;
    // Only the first step copies the model.
    int broadcasts = 0;
    for (const OpSpan& op : s->ops) broadcasts += op.kind == EventKind::Broadcast;
    EXPECT_EQ(broadcasts > 0, step == 0);
    // The step's record: every rank's memory, the routers' counts, traffic both ways.
    EXPECT_EQ(s->memory.size(), 2u);
    EXPECT_FALSE(s->traffic.empty());
  }
  EXPECT_EQ(r.state.resident().size(), 2u);
}

TEST(RecordedRun, TheDataParallelStepIsReadFromTheRecordedSpans) {
  const RecordedDpSteps& r = story_dp_steps();
  ASSERT_NE(r.one.last_complete(), nullptr);
  ASSERT_NE(r.two.last_complete(), nullptr);
  const RunStep& one = *r.one.last_complete();
  const RunStep& two = *r.two.last_complete();
  EXPECT_TRUE(one.spans_whole);
  EXPECT_TRUE(two.spans_whole);
  const DpStepFacts& f = r.facts;
  EXPECT_EQ(f.one_gpu_s, one.virtual_s);
  EXPECT_EQ(f.two_total_s, two.virtual_s);
  double ar = 0, update = 0;
  int calls = 0;
  for (const OpSpan& op : two.ops) {
    if (op.rank != 0) continue;
    if (op.kind == EventKind::AllReduce) ar += op.vend - op.vbegin, ++calls;
    if (op.kind == EventKind::Update) update += op.vend - op.vbegin;
  }
  EXPECT_DOUBLE_EQ(f.two_allreduce_s, ar);
  EXPECT_DOUBLE_EQ(f.two_update_s, update);
  EXPECT_EQ(f.allreduce_ops, calls);
  EXPECT_GT(calls, 0);
  // The plan's all-reduces of rank 0, one each.
  int planned = 0;
  for (const trainer::Op& op : r.two.run()->plan_of(0).ops) planned += op.rank == 0 && op.kind == OpKind::AllReduce;
  EXPECT_EQ(calls, planned);
  // The same texts on one GPU and on two give the same loss (up to float summation order).
  EXPECT_NEAR(f.loss_one, f.loss_two, 1e-4);
  EXPECT_TRUE(f.replicas_equal);
  // Facts and picture agree: the parts of GPU 1's step fit inside the step.
  EXPECT_LE(f.two_compute_s + f.two_wait_s + f.two_allreduce_s + f.two_update_s, f.two_total_s + 1e-9);
}

TEST(RecordedRun, TheCopyIsTheFirstStepsBroadcastsOneLayerEach) {
  const CopyFacts& c = story_model_copy();
  EXPECT_EQ(static_cast<int>(c.layers.size()), story_model_copy_broadcasts());
  // Each layer twice: its dense weights, then its experts (two groups, two collectives).
  std::map<int, int> per_layer;
  for (int l : c.layers) ++per_layer[l];
  ASSERT_EQ(per_layer.size(), 4u);
  for (const auto& [l, n] : per_layer) EXPECT_EQ(n, 2) << "layer " << l + 1;
  EXPECT_GT(c.bytes, 0);
  EXPECT_TRUE(c.second_empty_before);
  EXPECT_TRUE(c.equal_after);
}

TEST(RecordedRun, ExpertTrafficIsTheStepsTrafficRows) {
  const Traffic& t = story_expert_traffic();
  const int S = StoryRun::get().tray_batch().S;
  const trainer::ModelConfig m = story_model();
  EXPECT_EQ(t.pairs_per_gpu, 2 * S * m.top_k);  // two texts a GPU, top-k experts a token
  for (int g = 0; g < 2; ++g) {
    ASSERT_EQ(t.moved[g].size(), static_cast<std::size_t>(m.n_layers));
    for (int l = 0; l < m.n_layers; ++l) EXPECT_EQ(t.crossing[g][l], t.moved[g][l]);
  }
  EXPECT_GE(t.example_expert, m.n_experts / 2);  // GPU 1's token went to GPU 2's experts
  EXPECT_FALSE(t.example_token.empty());
}

TEST(RecordedRun, SplittingTheExpertsShrinksWhatAGpuHolds) {
  const SplitBytes& b = story_expert_split_bytes();
  EXPECT_GT(b.split, 0);
  EXPECT_LT(b.split, b.replicated);
}

TEST(RecordedRun, LoneCopiesDriftAndTheirGradientsAreProbes) {
  const DriftFacts& d = story_drift();
  EXPECT_TRUE(d.equal_before);
  ASSERT_EQ(d.rel_diff.size(), 3u);
  for (double x : d.rel_diff) EXPECT_GT(x, 0.0);
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(d.grad_norm[k].size(), 4u);
    for (double g : d.grad_norm[k]) EXPECT_GT(g, 0.0);
  }
  EXPECT_NE(d.grad_norm[0], d.grad_norm[1]);  // different texts, different gradients
}
