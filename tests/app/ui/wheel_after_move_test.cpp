// A wheel turn where the pointer has just moved waits one frame (app/ui/wheel_after_move.h):
// the window judges it from ImGui's view of the pointer, which is a frame old.
#include <gtest/gtest.h>

#include "app/ui/wheel_after_move.h"

namespace onegpu::app {
namespace {

TEST(WheelAfterMove, ATurnWhereThePointerWasIsJudgedAtOnce) {
  WheelAfterMove w;
  const auto now = w.ready({{-1.0f, 700.0, 300.0}}, 700.0, 300.0);
  ASSERT_EQ(now.size(), 1u);
  EXPECT_FALSE(w.holding());
}

TEST(WheelAfterMove, ATurnWhereThePointerJustMovedWaitsOneFrameThenIsJudged) {
  WheelAfterMove w;
  // The last frame saw the pointer over the chapter list; the turn came over the picture.
  EXPECT_TRUE(w.ready({{-1.0f, 700.0, 300.0}}, 100.0, 616.0).empty());
  EXPECT_TRUE(w.holding()) << "a frame is owed";
  // That frame is drawn with the pointer on the picture; the turn is judged in the next.
  const auto later = w.ready({}, 700.0, 300.0);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_FLOAT_EQ(later[0].dy, -1.0f);
  EXPECT_FALSE(w.holding());
}

TEST(WheelAfterMove, AHeldTurnIsNotHeldTwiceAndKeepsItsPlaceBeforeNewOnes) {
  WheelAfterMove w;
  (void)w.ready({{1.0f, 700.0, 300.0}}, 100.0, 100.0);
  // Still moving: the held turn goes now (once only), the new one waits.
  const auto now = w.ready({{-1.0f, 720.0, 310.0}}, 700.0, 300.0);
  ASSERT_EQ(now.size(), 1u);
  EXPECT_FLOAT_EQ(now[0].dy, 1.0f);
  EXPECT_TRUE(w.holding());
  const auto next = w.ready({}, 720.0, 310.0);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_FLOAT_EQ(next[0].dy, -1.0f);
}

}  // namespace
}  // namespace onegpu::app
