// The Lab's timeline, following a running step, starts its axis on the length of the step
// before it: a slow first step (page faults, caches) must not leave every later step drawn
// bunched at the left until "fit" is pressed.
#include <gtest/gtest.h>

#include "app/lab/timeline_axis.h"

namespace onegpu::app {
namespace {

StepLine line(int step, double virtual_s, double wall_s) {
  StepLine l;
  l.step = step;
  l.virtual_s = virtual_s;
  l.wall_s = wall_s;
  return l;
}

TEST(TimelineAxis, ANewStepStartsOnTheStepBeforeItNotTheLongest) {
  const std::deque<StepLine> h{line(0, 3.8, 4.0), line(1, 1.5, 1.6), line(2, 1.4, 1.5)};
  EXPECT_DOUBLE_EQ(step_before(h, 3, false, 9.0), 1.4);
  EXPECT_DOUBLE_EQ(step_before(h, 3, true, 9.0), 1.5);
  EXPECT_DOUBLE_EQ(step_before(h, 2, false, 9.0), 1.5) << "the step just before, not a later one";
  EXPECT_DOUBLE_EQ(step_before(h, 0, false, 9.0), 9.0) << "no step before the first";
  EXPECT_DOUBLE_EQ(step_before({}, 5, false, 0.25), 0.25);
}

}  // namespace
}  // namespace onegpu::app
