// The run state, fed by a real split run's events: for every split the tests use, the events
// of a step match the plan's ops one for one (per kind and per rank), the spans equal the
// engine's own Timeline, and the step's loss, memory, router counts and traffic agree with
// what the trainer returned.
#include <gtest/gtest.h>

#include <map>

#include "app/live/run_state.h"
#include "trainer/data/story_corpus.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::app {
namespace {

using trainer::EventKind;

struct Split {
  const char* name;
  int dp, ep, pp, vstages, microbatches;
  trainer::Schedule schedule;
};

class RunStateSplits : public ::testing::TestWithParam<Split> {};

const trainer::TokenDataset& data() {
  static trainer::Corpus c = [] {
    trainer::StoryCorpusOptions co;
    co.target_bytes = std::size_t{64} << 10;
    return trainer::generate_story_corpus(co);
  }();
  static trainer::BpeTokenizer tok = trainer::BpeTokenizer::train(c.train);
  static trainer::TokenDataset d = trainer::TokenDataset::build(tok, c.train);
  return d;
}

int vocab() {
  data();
  static int v = [] {
    trainer::StoryCorpusOptions co;
    co.target_bytes = std::size_t{64} << 10;
    return (int)trainer::BpeTokenizer::train(trainer::generate_story_corpus(co).train).vocab_size();
  }();
  return v;
}

TEST_P(RunStateSplits, EventsMatchThePlanAndTheEnginesTimeline) {
  const Split sp = GetParam();
  trainer::ModelConfig m = trainer::model_preset("story");
  m.vocab = vocab();
  m.seq_len = 16;
  const int workers = 2;
  auto stream = std::make_shared<trainer::EventStream>(workers + 1);
  trainer::ParallelOptions o;
  o.dp = sp.dp;
  o.ep = sp.ep;
  o.pp = sp.pp;
  o.vstages = sp.vstages;
  o.microbatches = sp.microbatches;
  o.schedule = sp.schedule;
  o.batch = 4;
  o.workers = workers;
  o.events = stream.get();
  auto run = std::make_shared<LiveRun>();
  run->model = m;
  run->workers = workers;
  run->events = stream;
  const trainer::RunConfig rc = trainer::parallel_run_config(m, o);
  run->steady_plan = std::make_shared<const trainer::Plan>(trainer::compile_plan(rc));
  run->first_plan = std::make_shared<const trainer::Plan>(trainer::compile_plan(rc, {.broadcast_model = true}));
  trainer::ParallelTrainer t(m, o, data());
  RunState rs;
  rs.attach(run);

  for (int step = 0; step < 2; ++step) {
    const trainer::ParallelStepResult r = t.step();
    rs.drain();
    // The runner's lane is not used here: close the step by hand as the job runner would.
    trainer::Event end;
    end.kind = EventKind::StepEnd;
    end.step = step;
    end.value = r.loss;
    rs.consume(end);
    const RunStep* s = rs.find(step);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->complete);
    const trainer::Plan& plan = t.plan();
    EXPECT_EQ(&run->plan_of(step) == run->first_plan.get(), step == 0);
    ASSERT_EQ(s->ops.size(), plan.ops.size()) << "one span per op";
    std::map<std::pair<int, EventKind>, int> want, got;
    for (const trainer::Op& op : plan.ops) {
      const trainer::Event e = trainer::op_event(plan, t.timeline(), op.id, step);
      ++want[{op.rank, e.kind}];
    }
    for (const OpSpan& o : s->ops) ++got[{o.rank, o.kind}];
    EXPECT_EQ(got, want) << "count per rank and kind";
    const trainer::Timeline mine = rs.timeline(*s);
    const trainer::Timeline& theirs = t.timeline();
    ASSERT_EQ(mine.ops.size(), theirs.ops.size());
    for (std::size_t i = 0; i < mine.ops.size(); ++i) {
      EXPECT_EQ(mine.ops[i].begin, theirs.ops[i].begin) << trainer::describe(plan.ops[i]);
      EXPECT_EQ(mine.ops[i].end, theirs.ops[i].end) << trainer::describe(plan.ops[i]);
      EXPECT_EQ(mine.ops[i].wall_begin_ns, theirs.ops[i].wall_begin_ns);
    }
    EXPECT_TRUE(s->spans_whole);
    EXPECT_NEAR(s->bubble, r.bubble, 1e-12);
    EXPECT_EQ(s->textbook, trainer::textbook_bubble(plan.config));
    // A loss per microbatch of every data-parallel copy, from the last stage.
    EXPECT_EQ((int)s->microbatch_loss.size(), sp.dp * sp.microbatches);
    // Activation levels: one per compute op.
    int compute = 0;
    for (const trainer::Op& op : plan.ops) compute += op.is_compute();
    EXPECT_EQ((int)s->activations.size(), compute);
  }
  EXPECT_EQ(rs.dropped(), 0u);
  EXPECT_EQ(rs.history().size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(
    Splits, RunStateSplits,
    ::testing::Values(Split{"one_rank", 1, 1, 1, 1, 1, trainer::Schedule::OneFOneB},
                      Split{"dp2", 2, 1, 1, 1, 1, trainer::Schedule::OneFOneB},
                      Split{"dp2_ep2", 2, 2, 1, 1, 1, trainer::Schedule::OneFOneB},
                      Split{"pp2_gpipe", 1, 1, 2, 1, 2, trainer::Schedule::GPipe},
                      Split{"pp2_1f1b", 1, 1, 2, 1, 2, trainer::Schedule::OneFOneB},
                      Split{"pp2_interleaved", 1, 1, 2, 2, 2, trainer::Schedule::Interleaved},
                      Split{"pp2_zb1", 1, 1, 2, 1, 2, trainer::Schedule::ZeroBubbleH1},
                      Split{"pp2_dp2_ep2", 2, 2, 2, 1, 2, trainer::Schedule::OneFOneB}),
    [](const auto& info) { return std::string(info.param.name); });

// A ring too small for a step: the loss is counted, never silent.
TEST(RunState, ForcedOverflowIsCountedPerLane) {
  trainer::ModelConfig m = trainer::model_preset("story");
  m.vocab = vocab();
  m.seq_len = 16;
  auto stream = std::make_shared<trainer::EventStream>(2, 16);  // 16 events a lane
  trainer::ParallelOptions o;
  o.pp = 2;
  o.microbatches = 4;
  o.batch = 4;
  o.workers = 1;
  o.events = stream.get();
  auto run = std::make_shared<LiveRun>();
  run->model = m;
  run->workers = 1;
  run->events = stream;
  const trainer::RunConfig rc = trainer::parallel_run_config(m, o);
  run->steady_plan = std::make_shared<const trainer::Plan>(trainer::compile_plan(rc));
  trainer::ParallelTrainer t(m, o, data());
  RunState rs;
  rs.attach(run);
  t.step();
  rs.drain();
  ASSERT_GT(rs.dropped(), 0u);
  EXPECT_EQ(rs.dropped_per_lane()[0], rs.dropped()) << "all of it lost on the one worker's lane";
  EXPECT_EQ(rs.dropped(), stream->dropped());
  EXPECT_LT(rs.find(0)->ops.size(), t.plan().ops.size());
}

}  // namespace
}  // namespace onegpu::app
