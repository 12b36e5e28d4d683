// A press where the pointer has just moved reaches ImGui a frame later, after the pointer;
// a press where it already was goes through at once (app/ui/press_after_move.h).
#include <gtest/gtest.h>

#include "app/ui/press_after_move.h"

using onegpu::app::PressAfterMove;

TEST(PressAfterMove, AMoveAndAClickInOneFrameShowThePointerFirstThenThePress) {
  PressAfterMove p;
  bool d[3] = {false, false, false};
  p.filter(10, 10, d);  // resting
  // Moved and pressed and released within one frame: the backend still reports the press.
  d[0] = true;
  p.filter(400, 300, d);
  EXPECT_FALSE(d[0]) << "the pointer's new place first";
  EXPECT_TRUE(p.holding());
  d[0] = false;  // the button is up again by the next frame
  p.filter(400, 300, d);
  EXPECT_TRUE(d[0]) << "then the press";
  EXPECT_FALSE(p.holding());
  d[0] = false;
  p.filter(400, 300, d);
  EXPECT_FALSE(d[0]) << "then the release";
}

TEST(PressAfterMove, APressWhereThePointerRestsAndAHeldDragGoStraightThrough) {
  PressAfterMove p;
  bool d[3] = {false, false, false};
  p.filter(50, 60, d);
  d[1] = true;
  p.filter(50, 60, d);
  EXPECT_TRUE(d[1]);
  // Held down while moving (a drag): nothing is held back.
  for (int i = 1; i < 5; ++i) {
    d[1] = true;
    p.filter(50.0f + 10.0f * i, 60, d);
    EXPECT_TRUE(d[1]);
  }
  EXPECT_FALSE(p.holding());
}
