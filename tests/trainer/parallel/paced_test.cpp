// A step of the real model run one op at a time (by hand) computes exactly what the
// free-running step computes: the picture can walk through a real step.
#include <gtest/gtest.h>

#include "tests/support/small_story.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::trainer {
namespace {

TEST(ParallelPaced, ByHandStepEqualsFreeRunningStep) {
  const auto& story = ::onegpu::test::small_story<16>();
  const ModelConfig& m = story.model;
  const TokenDataset& data = story.train;
  ParallelOptions o;
  o.dp = 2;
  o.ep = 2;
  o.pp = 2;
  o.microbatches = 2;
  o.batch = 4;
  o.workers = 2;

  ParallelTrainer free_run(m, o, data), by_hand(m, o, data);
  std::vector<double> a, b;
  for (int s = 0; s < 2; ++s) a.push_back(free_run.step().loss);

  for (int s = 0; s < 2; ++s) {
    by_hand.begin_step();
    Engine& e = by_hand.engine();
    std::size_t done = 0;
    EXPECT_EQ(e.ops_done(), 0u);
    while (e.step_one() == EngineState::Paused) {
      ASSERT_GT(e.ops_done(), done) << "an op was released but nothing ran";
      done = e.ops_done();
    }
    EXPECT_TRUE(e.finished());
    b.push_back(by_hand.finish_step().loss);
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(free_run.master_weights(), by_hand.master_weights());
  EXPECT_THROW(by_hand.engine(), Error);  // no step begun
}

}  // namespace
}  // namespace onegpu::trainer
