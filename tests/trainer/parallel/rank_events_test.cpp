// What the real runner puts in the event stream: every op the engine ran, and a loss per
// microbatch from the rank holding the last chunk, whose mean is the step's loss.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "tests/support/small_story.h"
#include "trainer/events/event_stream.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::trainer {
namespace {

TEST(ParallelEvents, OpsAndMicrobatchLossesReachTheStream) {
  const auto& story = ::onegpu::test::small_story<16>();
  const ModelConfig& m = story.model;
  const TokenDataset& data = story.train;

  EventStream events(2);
  ParallelOptions o;
  o.dp = 2;
  o.ep = 2;
  o.pp = 2;
  o.microbatches = 2;
  o.batch = 4;
  o.workers = 2;
  o.events = &events;
  o.broadcast_first_step = false;
  ParallelTrainer t(m, o, data);
  const ParallelStepResult r = t.step();

  std::map<EventKind, int> count;
  double loss_sum = 0;
  events.drain([&](const Event& e) {
    ++count[e.kind];
    if (e.kind == EventKind::Loss) {
      loss_sum += e.value;
      EXPECT_EQ(t.plan().layout.coord(e.rank).stage, 1) << "losses come from the last stage";
    }
  });
  EXPECT_EQ(events.dropped(), 0u);
  ASSERT_EQ(count[EventKind::Loss], 4);  // dp × microbatches
  // One text of 16 tokens per microbatch: every microbatch has the same number of targets,
  // so the mean of the microbatch losses is the step's loss.
  EXPECT_NEAR(loss_sum / 4, r.loss, 1e-9 * r.loss);
  int forwards = 0, a2a = 0;
  for (const Op& op : t.plan().ops) {
    forwards += op.kind == OpKind::Forward;
    a2a += op.kind == OpKind::AllToAll;
  }
  EXPECT_EQ(count[EventKind::Forward], forwards);
  EXPECT_EQ(count[EventKind::AllToAll], a2a);
  EXPECT_EQ(count[EventKind::Update], t.world());
}

}  // namespace
}  // namespace onegpu::trainer
