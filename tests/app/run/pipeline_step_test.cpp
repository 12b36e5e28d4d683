// read_step on plans run on the virtual clock alone (no maths): what chapters 21-23
// draw must add up to the engine's own summary and, with the textbook's unit costs, to the
// textbook's bubble.
#include <gtest/gtest.h>

#include "app/run/step_reader.h"
#include "trainer/error.h"
#include "trainer/engine/engine.h"
#include "trainer/engine/replay.h"

using namespace onegpu;
using namespace onegpu::app;
using namespace onegpu::trainer;

namespace {

RunConfig four_gpus(int microbatches, Schedule schedule) {  // pp=2 x dp=2 x ep=2, as the chapters run
  RunConfig c;
  c.layers = 8;
  c.experts = 16;
  c.pp = 2;
  c.dp = 2;
  c.ep = 2;
  c.microbatches = microbatches;
  c.schedule = schedule;
  return c;
}

}  // namespace

TEST(PipelineStep, UnitCostsGiveTheTextbookBubble) {
  for (int m : {1, 2, 4}) {
    // With experts split, the all-to-alls cost nothing under unit costs, so idle is the schedule's alone.
    const Plan plan = compile_plan(four_gpus(m, m >= 2 ? Schedule::OneFOneB : Schedule::GPipe));
    const PipelineStep s = read_step(plan, simulate(plan, CostModel::unit()));
    EXPECT_DOUBLE_EQ(s.textbook, 1.0 / (m + 1)) << m;
    EXPECT_NEAR(s.bubble, s.textbook, 1e-9) << m;
  }
}

TEST(PipelineStep, SpansHandoffsAndIdleAgreeWithTheTimeline) {
  const Plan plan = compile_plan(four_gpus(4, Schedule::OneFOneB));
  CostModel cost = CostModel::unit();
  cost.free_comm = false;  // sends take time: hand-overs have a length
  const Timeline tl = simulate(plan, cost);
  const PipelineStep s = read_step(plan, tl);
  ASSERT_EQ(s.pp, 2);
  ASSERT_EQ(s.dp, 2);
  // Every rank works on each microbatch once going up and once coming down.
  EXPECT_EQ(s.spans.size(), 4u * 4u * 2u);
  for (int r = 0; r < 4; ++r) {
    double busy = 0;
    for (const PipeOp& o : s.ops)
      if (o.rank == r) busy += o.end - o.begin;
    EXPECT_NEAR(s.busy(r), busy, 1e-12);
    EXPECT_NEAR(s.rank_idle[r], 1.0 - busy / s.pipeline_end, 1e-9) << r;
    double last = -1.0;
    for (const PipeSpan& sp : s.spans) {
      if (sp.rank != r) continue;
      EXPECT_GE(sp.begin, last);  // in time order
      EXPECT_LE(sp.end, s.pipeline_end);
      last = sp.begin;
    }
  }
  // Each GPU of stage 1 hands up four microbatches and gets four corrections back.
  int up = 0, down = 0;
  for (const PipeHandoff& h : s.handoffs) {
    EXPECT_LE(h.sent, h.arrived);
    if (h.backward) {
      ++down;
      EXPECT_EQ(s.stage_of(h.from), 1);
      EXPECT_EQ(s.stage_of(h.to), 0);
    } else {
      ++up;
      EXPECT_EQ(s.stage_of(h.from), 0);
      EXPECT_EQ(s.stage_of(h.to), 1);
    }
  }
  EXPECT_EQ(up, 8);
  EXPECT_EQ(down, 8);
  // Both stages' gradients meet after their last backward.
  for (int stage = 0; stage < 2; ++stage) EXPECT_GT(s.meet_end[stage], s.meet_begin[stage] - 1e-12);
  EXPECT_GE(s.step_end, s.pipeline_end);
}

TEST(PipelineStep, InOneFOneBTheStagesOverlapOnDifferentMicrobatches) {
  const Plan plan = compile_plan(four_gpus(2, Schedule::OneFOneB));
  const PipelineStep s = read_step(plan, simulate(plan, CostModel::unit()));
  // Stage 2's first microbatch runs while stage 1 runs its second.
  bool overlap = false, fwd_with_bwd = false;
  for (const PipeSpan& a : s.spans)
    for (const PipeSpan& b : s.spans)
      if (a.rank == 0 && b.rank == 2 && a.microbatch != b.microbatch && a.begin < b.end && b.begin < a.end) {
        overlap = true;
        fwd_with_bwd |= a.backward != b.backward;
      }
  EXPECT_TRUE(overlap);
  EXPECT_TRUE(fwd_with_bwd);  // some GPU goes forward while another goes backward
}

TEST(PipelineStep, ReplayGivesEachOpItsCostAndMatchesTheSimulator) {
  const Plan plan = compile_plan(four_gpus(2, Schedule::OneFOneB));
  // Unit costs: the replay and the simulator agree op for op.
  const Timeline sim = simulate(plan, CostModel::unit());
  const Timeline rep = trainer::replay_on_clock(plan, CostModel::unit(), std::vector<double>(plan.ops.size(), 0.0));
  ASSERT_EQ(sim.ops.size(), rep.ops.size());
  for (std::size_t i = 0; i < sim.ops.size(); ++i) {
    EXPECT_DOUBLE_EQ(sim.ops[i].begin, rep.ops[i].begin) << describe(plan.ops[i]);
    EXPECT_DOUBLE_EQ(sim.ops[i].end, rep.ops[i].end) << describe(plan.ops[i]);
  }
  // Measured costs: every compute op lasts exactly what it was given.
  CostModel measured;
  std::vector<double> cost(plan.ops.size());
  for (std::size_t i = 0; i < cost.size(); ++i) cost[i] = 1e-3 * double(1 + i % 7);
  const Timeline tl = trainer::replay_on_clock(plan, measured, cost);
  for (const Op& op : plan.ops) {
    if (!op.is_compute()) continue;
    EXPECT_NEAR(tl.ops[op.id].end - tl.ops[op.id].begin, cost[op.id], 1e-12) << describe(op);
  }
  EXPECT_THROW(trainer::replay_on_clock(plan, measured, {1.0}), Error);
}

// The chapters read their step from a run state fed by the step's events (record_step), as the
// Lab reads the live run: what comes back is the timeline to the bit, the engine's idle to the
// bit, and the recorded run keeps the plan, the loss and the tokens.
TEST(PipelineStep, ReadFromTheRunStateIsTheTimelineToTheBit) {
  const Plan plan = compile_plan(four_gpus(4, Schedule::OneFOneB));
  std::vector<double> cost(plan.ops.size());
  for (std::size_t i = 0; i < cost.size(); ++i) cost[i] = 1e-4 * double(1 + (i * 7) % 11);
  const Timeline tl = trainer::replay_on_clock(plan, CostModel{}, cost);
  ModelConfig model;
  model.n_layers = 8;
  model.n_experts = 16;
  const RecordedStep r = record_step(recorded_run(plan, model, 8, 32), tl, 2.5, 5);
  const RunStep* rec = r.state.last_complete();
  ASSERT_NE(rec, nullptr);
  EXPECT_TRUE(rec->spans_whole);
  EXPECT_EQ(rec->ops.size(), plan.ops.size());
  const Summary sum = summarize(plan, tl);
  const PipelineStep& s = r.step;
  EXPECT_EQ(s.pipeline_end, sum.pipeline_end);
  EXPECT_EQ(s.step_end, sum.step_time);
  EXPECT_EQ(s.rank_idle, sum.rank_idle);
  EXPECT_EQ(s.stage_idle, sum.stage_idle);
  EXPECT_EQ(s.textbook, textbook_bubble(plan.config));
  std::size_t k = 0;
  for (const Op& op : plan.ops) {
    if (op.kind != OpKind::Forward && !op.is_backward()) continue;
    ASSERT_LT(k, s.ops.size());
    const PipeOp& o = s.ops[k++];
    EXPECT_EQ(o.rank, op.rank);
    EXPECT_EQ(o.microbatch, op.microbatch);
    EXPECT_EQ(o.layer_begin, op.layer_begin);
    EXPECT_EQ(o.layer_end, op.layer_end);
    EXPECT_EQ(o.begin, tl.ops[op.id].begin);
    EXPECT_EQ(o.end, tl.ops[op.id].end);
  }
  EXPECT_EQ(k, s.ops.size());
  EXPECT_EQ(s.loss, 2.5);
  EXPECT_EQ(s.texts, 8);
  EXPECT_EQ(s.seq, 32);
  EXPECT_EQ(s.measured_runs, 5);
  // A record missing a span is refused, not drawn with a hole.
  RunState partial;
  partial.attach(recorded_run(plan, model));
  const auto events = timeline_events(plan, tl, 0);
  for (std::size_t i = 1; i < events.size(); ++i) partial.consume(events[i]);
  Event end;
  end.kind = EventKind::StepEnd;
  partial.consume(end);
  ASSERT_NE(partial.last_complete(), nullptr);
  EXPECT_THROW(read_step(partial, *partial.last_complete()), Error);
}
