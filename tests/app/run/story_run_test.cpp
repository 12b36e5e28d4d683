// StoryRun::ready(): the story (corpus, tokenizer, the first step's texts) is built by a job on
// the runner, never by the frame that first asks for it.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "app/live/job_runner.h"
#include "app/run/story_run.h"

using namespace onegpu::app;

TEST(StoryRun, ReadyQueuesTheBuildingAndReturnsAtOnce) {
  if (StoryRun::ready()) GTEST_SKIP() << "the story was built earlier in this process (ctest runs this test alone)";
  // That first ask returned null: it queued the job and did not build here. The runner's
  // status names the job while it runs; ask until the story is there.
  StoryRun* run = nullptr;
  bool named = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (!(run = StoryRun::ready()) && std::chrono::steady_clock::now() < until) {
    named |= JobRunner::shared().status().job == kStoryBuilding;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_NE(run, nullptr);
  EXPECT_TRUE(named) << "the status bar never said the story was being built";
  EXPECT_EQ(run, &StoryRun::get());
  ASSERT_EQ(run->trays().size(), 4u);
  EXPECT_EQ(run->trays()[0].text.rfind("Once upon a", 0), 0u);
  StoryRun::build_soon();  // once built, nothing more is queued
  EXPECT_EQ(StoryRun::ready(), run);
}
