// read_step as the 64-GPU step chapter uses it, on plans run on the virtual clock alone (no
// maths): spans, idle shares and the re-clocking with chosen op costs.
#include <gtest/gtest.h>

#include <cmath>

#include "app/run/step_reader.h"
#include "trainer/model/config.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/engine/replay.h"

using namespace onegpu;
using namespace onegpu::app;

namespace {

trainer::Plan small_plan(int pp, int dp, int ep, int m) {
  trainer::ModelConfig model = trainer::model_preset("story");
  model.n_layers = 2 * pp;
  trainer::ParallelOptions o;
  o.pp = pp, o.dp = dp, o.ep = ep, o.microbatches = m, o.batch = dp * m, o.seq_len = 8;
  o.schedule = trainer::Schedule::OneFOneB;
  return trainer::compile_plan(trainer::parallel_run_config(model, o));
}

}  // namespace

TEST(ScaleStep, UnitCostsGiveTheTextbookBubbleAndOneSpanPerMicrobatchAndDirection) {
  for (int m : {4, 8}) {
    trainer::Plan plan = small_plan(4, 2, 2, m);
    PipelineStep s = read_step(plan, trainer::simulate(plan, trainer::CostModel::unit()));
    EXPECT_EQ(s.pp, 4);
    EXPECT_EQ(s.dp, 2);
    ASSERT_EQ(s.spans.size(), std::size_t(plan.world() * m * 2));
    EXPECT_NEAR(s.textbook, 3.0 / (m + 3.0), 1e-12);
    // Free all-to-alls: idle (no compute op) and waiting (no microbatch's work) agree.
    EXPECT_NEAR(s.bubble, s.textbook, 1e-9) << m << " microbatches";
    EXPECT_NEAR(s.waiting, s.textbook, 1e-9) << m << " microbatches";
    ASSERT_EQ(s.stage_idle.size(), 4u);
    ASSERT_EQ(s.stage_waiting.size(), 4u);
    for (double idle : s.stage_idle) EXPECT_NEAR(idle, s.textbook, 1e-9);
    for (double idle : s.stage_waiting) EXPECT_NEAR(idle, s.textbook, 1e-9);
    // A rank's spans follow one another without overlapping, and span_at finds them.
    for (std::size_t i = 1; i < s.spans.size(); ++i) {
      if (s.spans[i].rank == s.spans[i - 1].rank) {
        EXPECT_GE(s.spans[i].begin, s.spans[i - 1].end - 1e-12);
      }
    }
    for (const PipeSpan& sp : s.spans) {
      const PipeSpan* at = s.span_at(sp.rank, 0.5 * (sp.begin + sp.end));
      ASSERT_NE(at, nullptr);
      EXPECT_EQ(at->microbatch, sp.microbatch);
      EXPECT_EQ(at->backward, sp.backward);
    }
    EXPECT_EQ(s.span_at(0, -1.0), nullptr);
    // Every microbatch is handed up across each stage boundary and its gradient back down,
    // on every data-parallel rank.
    ASSERT_EQ(s.handoffs.size(), std::size_t(3 * 2 * m * 2));
    int up = 0;
    for (const PipeHandoff& h : s.handoffs) {
      EXPECT_EQ(h.to - h.from, h.backward ? -2 : 2);  // the same dp index one stage over
      up += !h.backward;
    }
    EXPECT_EQ(up, 3 * 2 * m);
    EXPECT_GE(s.step_end, s.pipeline_end);
  }
}

TEST(ScaleStep, ReclockWithTheUnitCostsReproducesTheSimulation) {
  trainer::Plan plan = small_plan(4, 2, 2, 4);
  const trainer::CostModel unit = trainer::CostModel::unit();
  trainer::Timeline a = trainer::simulate(plan, unit);
  trainer::CostModel measured = unit;
  measured.compute = trainer::ComputeCost::Measured;
  std::vector<double> costs(plan.ops.size(), 0.0);
  for (const trainer::Op& op : plan.ops) costs[op.id] = unit.compute_cost(plan, op, 0.0);
  trainer::Timeline b = trainer::replay_on_clock(plan, measured, costs);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_DOUBLE_EQ(a.ops[i].begin, b.ops[i].begin) << trainer::describe(plan.ops[i]);
    EXPECT_DOUBLE_EQ(a.ops[i].end, b.ops[i].end);
  }
  // Doubling every op's cost doubles the step (communication is free here).
  for (double& c : costs) c *= 2.0;
  EXPECT_DOUBLE_EQ(trainer::replay_on_clock(plan, measured, costs).end, 2.0 * a.end);
}
