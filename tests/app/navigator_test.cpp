#include <gtest/gtest.h>

#include "app/navigator.h"

using namespace onegpu::app;

TEST(Navigator, ArrowsMoveAndStopAtTheEnds) {
  Navigator n(29, 0);
  n.apply(Action::Previous, 0.0);
  EXPECT_EQ(n.index(), 0);
  n.apply(Action::Next, 0.1);
  EXPECT_EQ(n.index(), 1);
  EXPECT_FALSE(n.entered_backward());
  n.apply(Action::Last, 0.2);
  EXPECT_EQ(n.index(), 28);
  n.apply(Action::Next, 0.3);
  EXPECT_EQ(n.index(), 28);
  n.apply(Action::First, 0.4);
  EXPECT_EQ(n.index(), 0);
}

TEST(Navigator, GoingBackEntersAtTheEndAndReplayRestarts) {
  Navigator n(29, 3);
  n.advance(2.0f);
  EXPECT_FLOAT_EQ(n.time(), 2.0f);
  n.apply(Action::Previous, 1.0);
  EXPECT_EQ(n.index(), 2);
  EXPECT_TRUE(n.entered_backward());
  EXPECT_EQ(n.time(), 0.0f);
  n.set_time(5.0f);
  n.apply(Action::Replay, 1.5);
  EXPECT_EQ(n.time(), 0.0f);
  EXPECT_FALSE(n.entered_backward());
}

TEST(Navigator, EscapeTwiceQuitsButNotWhenFarApart) {
  Navigator n(29, 0);
  n.apply(Action::Escape, 10.0);
  EXPECT_FALSE(n.quit());
  EXPECT_EQ(n.toast(10.5), "Press Esc again to quit");
  EXPECT_EQ(n.toast(13.0), "");
  n.apply(Action::Escape, 13.0);  // too late: starts a new pair
  EXPECT_FALSE(n.quit());
  n.apply(Action::Escape, 13.8);
  EXPECT_TRUE(n.quit());
  Navigator q(29, 0);
  q.apply(Action::Quit, 0.0);
  EXPECT_TRUE(q.quit());
}

TEST(Navigator, WheelTurnsOneChapterPerFlick) {
  Navigator n(29, 5);
  n.apply(Action::WheelForward, 1.0);
  n.apply(Action::WheelForward, 1.05);  // same flick: ignored
  n.apply(Action::WheelForward, 1.1);
  EXPECT_EQ(n.index(), 6);
  n.apply(Action::WheelBack, 2.0);
  EXPECT_EQ(n.index(), 5);
}

TEST(Navigator, UiScaleStepsAndResetsWithinLimits) {
  Navigator n(29, 0, 1.25f);
  n.apply(Action::ScaleUp, 0);
  EXPECT_GT(n.ui_scale(), 1.25f);
  for (int i = 0; i < 50; ++i) n.apply(Action::ScaleUp, 0);
  EXPECT_FLOAT_EQ(n.ui_scale(), 4.0f);
  for (int i = 0; i < 50; ++i) n.apply(Action::ScaleDown, 0);
  EXPECT_FLOAT_EQ(n.ui_scale(), 0.5f);
  n.apply(Action::ScaleReset, 0);
  EXPECT_FLOAT_EQ(n.ui_scale(), 1.25f);
}

// The window caps the scale (the Lab's panels break words past it): Ctrl+= there changes
// nothing and says why, Ctrl+- takes a step down from what is shown, and the scale chosen comes
// back when the cap lifts (a larger window, or the story).
TEST(Navigator, TheWindowCapsTheScaleAndCtrlPlusSaysWhy) {
  Navigator n(29, 0, 1.0f);
  for (int i = 0; i < 8; ++i) n.apply(Action::ScaleUp, 0);  // 1.15^8: about 3.06
  const float chosen = n.ui_scale();
  EXPECT_GT(chosen, 3.0f);
  n.set_scale_limit(1.68f);
  EXPECT_FLOAT_EQ(n.ui_scale(), 1.68f);
  EXPECT_EQ(n.toast(1.0), "");
  n.apply(Action::ScaleUp, 1.0);
  EXPECT_FLOAT_EQ(n.ui_scale(), 1.68f);
  EXPECT_NE(n.toast(1.1).find("at its largest for this window"), std::string::npos) << n.toast(1.1);
  n.set_scale_limit(Navigator::kMaxScale);
  EXPECT_FLOAT_EQ(n.ui_scale(), chosen) << "a press at the cap does not grow the scale chosen";
  n.set_scale_limit(1.68f);
  n.apply(Action::ScaleDown, 2.0);
  EXPECT_NEAR(n.ui_scale(), 1.68f / 1.15f, 1e-4f) << "one step down from the text shown";
  n.apply(Action::ScaleUp, 3.0);
  EXPECT_FLOAT_EQ(n.ui_scale(), 1.68f);
  // Under the cap the keys step as before, and with no cap there is nothing to say at 4.
  n.set_scale_limit(Navigator::kMaxScale);
  for (int i = 0; i < 50; ++i) n.apply(Action::ScaleUp, 10.0);
  EXPECT_FLOAT_EQ(n.ui_scale(), 4.0f);
  EXPECT_EQ(n.toast(10.1), "");
}

TEST(Navigator, SidebarAndFullscreenToggle) {
  Navigator n(29, 0);
  EXPECT_TRUE(n.sidebar_open());
  n.apply(Action::ToggleSidebar, 0);
  EXPECT_FALSE(n.sidebar_open());
  EXPECT_FALSE(n.fullscreen());
  n.apply(Action::ToggleFullscreen, 0);
  EXPECT_TRUE(n.fullscreen());
}

TEST(Navigator, JumpPlaysFromTheStart) {
  Navigator n(29, 0);
  n.advance(3.0f);
  n.go_to(17);
  EXPECT_EQ(n.index(), 17);
  EXPECT_EQ(n.time(), 0.0f);
  n.go_to(99);
  EXPECT_EQ(n.index(), 28);
}

TEST(Navigator, BlankComesBackOnAnyKeyWithoutActing) {
  Navigator n(29, 4);
  n.apply(Action::Blank, 0.0);
  EXPECT_TRUE(n.blank());
  n.apply(Action::Next, 0.1);  // the clicker's "next" only brings the picture back
  EXPECT_FALSE(n.blank());
  EXPECT_EQ(n.index(), 4);
  n.apply(Action::Next, 0.2);
  EXPECT_EQ(n.index(), 5);
}

TEST(Navigator, CleanReducedMotionAndHelpToggle) {
  Navigator n(29, 0);
  n.apply(Action::ToggleClean, 0.0);
  EXPECT_NE(n.toast(0.1).find("H brings them back"), std::string::npos);  // how to undo it, said
  n.apply(Action::ToggleReducedMotion, 0.0);
  EXPECT_NE(n.toast(0.1).find("Reduced motion"), std::string::npos);
  EXPECT_EQ(n.toast(5.0), "");  // and gone after a moment
  EXPECT_TRUE(n.clean());
  EXPECT_TRUE(n.reduced_motion());
  n.apply(Action::ToggleHelp, 0.0);
  EXPECT_TRUE(n.help_open());
  n.apply(Action::Next, 0.1);  // any key closes the list and still acts
  EXPECT_FALSE(n.help_open());
  EXPECT_EQ(n.index(), 1);
  n.apply(Action::ToggleClean, 0.2);
  EXPECT_FALSE(n.clean());
  n.apply(Action::ToggleHelp, 0.3);
  n.apply(Action::Escape, 0.4);  // closes the list only: no "press Esc again to quit"
  EXPECT_FALSE(n.help_open());
  EXPECT_EQ(n.toast(0.5), "");
}

TEST(Navigator, ButtonWaitsAgainOnEachVisitButNotComingBack) {
  Navigator n(29, 12);
  EXPECT_FALSE(n.button_done());
  n.apply(Action::PressButton, 0.0);
  EXPECT_TRUE(n.take_button_request());
  EXPECT_FALSE(n.take_button_request());  // taken once
  n.mark_button_done();
  n.apply(Action::Next, 0.1);
  EXPECT_FALSE(n.button_done());  // a new chapter waits for its own button
  n.apply(Action::Previous, 0.2);
  EXPECT_TRUE(n.button_done());  // coming back: already finished
  n.apply(Action::Replay, 0.3);
  EXPECT_FALSE(n.button_done());  // R plays it again, waiting again
}
