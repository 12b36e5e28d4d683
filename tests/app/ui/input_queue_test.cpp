// Every press counts: a clicker's taps go down and up within one frame, and each must turn a
// chapter. The taps are injected as GLFW would deliver them (press, release, press, ...)
// between two frames, then the frame takes them all.
#include <gtest/gtest.h>

#include <string>

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include "app/navigator.h"
#include "app/ui/input_queue.h"
#include "app/ui/key_commands.h"

using namespace onegpu::app;

namespace {
// One frame: everything queued since the last, through the story's key table.
void frame(InputQueue& q, Navigator& nav, double now) {
  for (const KeyPress& k : q.take().keys)
    if (auto a = story_action(k.key, k.mods)) nav.apply(*a, now);
}
}  // namespace

TEST(InputQueue, TwentyPageDownTapsInOneFrameTurnTwentyChapters) {
  InputQueue q;
  Navigator nav(29, 0);
  for (int i = 0; i < 20; ++i) {
    q.key(GLFW_KEY_PAGE_DOWN, GLFW_PRESS, 0);
    q.key(GLFW_KEY_PAGE_DOWN, GLFW_RELEASE, 0);
  }
  frame(q, nav, 1.0);
  EXPECT_EQ(nav.index(), 20);
}

TEST(InputQueue, TapsSpreadOverFramesAllCount) {
  InputQueue q;
  Navigator nav(29, 0);
  for (int i = 0; i < 10; ++i) {  // two taps a frame, then an empty frame
    for (int k = 0; k < 2; ++k) {
      q.key(GLFW_KEY_RIGHT, GLFW_PRESS, 0);
      q.key(GLFW_KEY_RIGHT, GLFW_RELEASE, 0);
    }
    frame(q, nav, i * 0.1);
    frame(q, nav, i * 0.1 + 0.05);
  }
  EXPECT_EQ(nav.index(), 20);
  for (int i = 0; i < 5; ++i) {
    q.key(GLFW_KEY_PAGE_UP, GLFW_PRESS, 0);
    q.key(GLFW_KEY_PAGE_UP, GLFW_RELEASE, 0);
  }
  frame(q, nav, 5.0);
  EXPECT_EQ(nav.index(), 15);
}

TEST(InputQueue, HeldKeyRepeatsAreNotPresses) {
  InputQueue q;
  q.key(GLFW_KEY_RIGHT, GLFW_PRESS, 0);
  q.key(GLFW_KEY_RIGHT, GLFW_REPEAT, 0);
  q.key(GLFW_KEY_RIGHT, GLFW_REPEAT, 0);
  q.key(GLFW_KEY_RIGHT, GLFW_RELEASE, 0);
  InputBatch b = q.take();
  EXPECT_EQ(b.keys.size(), 1u);
  EXPECT_TRUE(b.touched);
  EXPECT_FALSE(q.take().touched);  // taken: the next frame starts empty
}

TEST(InputQueue, WheelTurnsKeepTheirPointer) {
  InputQueue q;
  q.wheel(-1.0f, 300.0, 200.0);
  q.wheel(0.0f, 1.0, 1.0);  // a sideways-only scroll: not a turn
  InputBatch b = q.take();
  ASSERT_EQ(b.wheel.size(), 1u);
  EXPECT_LT(b.wheel[0].dy, 0.0f);
  EXPECT_DOUBLE_EQ(b.wheel[0].x, 300.0);
}

TEST(KeyCommands, PresenterKeysMapToTheirActions) {
  EXPECT_EQ(story_action(GLFW_KEY_B, 0), Action::Blank);
  EXPECT_EQ(story_action(GLFW_KEY_PERIOD, 0), Action::Blank);
  EXPECT_EQ(story_action(GLFW_KEY_H, 0), Action::ToggleClean);
  EXPECT_EQ(story_action(GLFW_KEY_M, 0), Action::ToggleReducedMotion);
  EXPECT_EQ(story_action(GLFW_KEY_ENTER, 0), Action::PressButton);
  EXPECT_EQ(story_action(GLFW_KEY_F1, 0), Action::ToggleHelp);
  EXPECT_EQ(story_action(GLFW_KEY_EQUAL, GLFW_MOD_CONTROL), Action::ScaleUp);
  EXPECT_EQ(story_action(GLFW_KEY_Q, GLFW_MOD_CONTROL), Action::Quit);
  EXPECT_FALSE(story_action(GLFW_KEY_Q, 0).has_value());
  // In the Lab the same letters are the Lab's: M is a microbatch there, not reduced motion.
  EXPECT_FALSE(lab_action(GLFW_KEY_M, 0).has_value());
  EXPECT_EQ(lab_key(GLFW_KEY_M, 0), 'm');
  EXPECT_EQ(lab_action(GLFW_KEY_ESCAPE, 0), Action::ToggleLab);
}

// The Lab's one key table: each key of a row reaches Lab::key as the row's command, the help
// lists every row with a name, and no Lab key is also one the Lab keeps its story meaning for.
TEST(KeyCommands, LabKeysComeFromOneTable) {
  std::string commands;
  for (const LabKeyRow& r : lab_keys()) {
    ASSERT_FALSE(r.glfw_keys.empty());
    for (int k : r.glfw_keys) {
      EXPECT_EQ(lab_key(k, 0), r.command) << r.keys;
      EXPECT_EQ(lab_key(k, GLFW_MOD_CONTROL), 0) << "Ctrl+" << r.keys << " is the window's, not the Lab's";
      EXPECT_FALSE(lab_action(k, 0).has_value()) << r.keys << " means two things in the Lab";
    }
    EXPECT_EQ(*r.keys == 0, *r.does == 0);
    commands += r.command;
  }
  EXPECT_EQ(commands, " .msfp[]");
  EXPECT_EQ(lab_key(GLFW_KEY_O, 0), '.');
  EXPECT_EQ(lab_key(GLFW_KEY_RIGHT_BRACKET, 0), ']');
  EXPECT_EQ(lab_key(GLFW_KEY_L, 0), 0);  // L leaves the Lab (a story action)
  // The row that names how to leave names keys that do leave, and none of the Lab's own.
  const LabKeyRow& leave = lab_leave_key();
  ASSERT_FALSE(leave.glfw_keys.empty());
  for (int k : leave.glfw_keys) {
    EXPECT_EQ(lab_action(k, 0), Action::ToggleLab) << leave.keys;
    EXPECT_EQ(lab_key(k, 0), 0) << leave.keys;
  }
}

// The keys overlay lists only presses that do what it says where it is shown: in the Lab its
// own keys first, and none of the chapters' (Space, M and . mean other things there).
TEST(KeyCommands, TheKeysOverlayListsOnlyKeysThatWorkWhereItIsShown) {
  for (bool lab : {false, true}) {
    const std::vector<HelpLine> lines = help_lines(lab);
    ASSERT_FALSE(lines.empty());
    bool lab_section = lab;
    int rows_with_presses = 0;
    for (const HelpLine& l : lines) {
      if (l.heading) {
        if (l.keys == "In the Lab") lab_section = true;
        continue;
      }
      EXPECT_FALSE(l.does.empty()) << l.keys;
      rows_with_presses += !l.presses.empty();
      for (const Press& p : l.presses) {
        const int mods = p.ctrl ? GLFW_MOD_CONTROL : 0;
        if (lab_section)
          EXPECT_TRUE(lab_key(p.glfw_key, mods) != 0 || lab_action(p.glfw_key, mods).has_value())
              << l.keys << " is listed for the Lab but does nothing there";
        else
          EXPECT_TRUE(story_action(p.glfw_key, mods).has_value()) << l.keys << " does nothing in the story";
      }
      if (lab) {
        EXPECT_NE(l.does, "next chapter");
        EXPECT_NE(l.does, "show or hide the chapter list");  // the Lab shows no chapter list
        EXPECT_EQ(l.keys.find("Esc twice"), std::string::npos);  // Esc leaves the Lab
      }
    }
    EXPECT_GE(rows_with_presses, 10);
    if (lab) {
      EXPECT_EQ(lines.front().keys, "Space");
      EXPECT_EQ(lines.front().does, "run / pause");
    } else {
      EXPECT_EQ(lines.front().does, "next chapter");
    }
  }
  // Tab changes nothing in the Lab (its chapter list would change unseen).
  EXPECT_FALSE(lab_action(GLFW_KEY_TAB, 0).has_value());
  EXPECT_EQ(story_action(GLFW_KEY_TAB, 0), Action::ToggleSidebar);
}
