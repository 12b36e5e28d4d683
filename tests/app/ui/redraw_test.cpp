// Draw on demand: a still window draws nothing; input, motion and background work do.
#include <gtest/gtest.h>

#include "app/ui/redraw.h"

using namespace onegpu::app;

TEST(RedrawPolicy, StillWindowStopsDrawingAfterSettling) {
  RedrawPolicy p;
  int drawn = 0;
  for (int i = 0; i < 100; ++i) drawn += p.should_draw(false, false, false, 1.0);
  EXPECT_EQ(drawn, RedrawPolicy::kSettleFrames);  // the first frames only
  EXPECT_GT(p.wait_seconds(false, false, 1.0), 0.0);  // and it sleeps
}

TEST(RedrawPolicy, InputAndMotionDraw) {
  RedrawPolicy p;
  for (int i = 0; i < 10; ++i) p.should_draw(false, false, false, 1.0);
  EXPECT_TRUE(p.should_draw(true, false, false, 1.0));   // a key or the pointer
  for (int i = 0; i < 10; ++i) p.should_draw(false, false, false, 1.0);
  EXPECT_TRUE(p.should_draw(false, true, false, 0.001));  // a chapter animating: every frame
  EXPECT_EQ(p.wait_seconds(true, false, 0.0), 0.0);
}

TEST(RedrawPolicy, BackgroundWorkDrawsAFewFramesASecond) {
  RedrawPolicy p;
  for (int i = 0; i < 10; ++i) p.should_draw(false, false, false, 1.0);
  p.should_draw(false, false, true, 0.0);  // work starts: settle frames owed
  for (int i = 0; i < 5; ++i) p.should_draw(false, false, true, 0.0);
  EXPECT_FALSE(p.should_draw(false, false, true, 0.01));  // too soon after the last frame
  EXPECT_TRUE(p.should_draw(false, false, true, 1.0 / RedrawPolicy::kBusyFps));
  EXPECT_TRUE(p.should_draw(false, false, false, 0.0));  // work ended: its result is drawn
}

TEST(WheelOverScene, OnlyInsideThePicture) {
  PixelRect scene{290, 0, 1310, 700};
  EXPECT_TRUE(wheel_over_scene(scene, 800, 300));
  EXPECT_FALSE(wheel_over_scene(scene, 100, 300));  // the chapter list
  EXPECT_FALSE(wheel_over_scene(scene, 800, 750));  // the caption panel
}
