// In front of a class: every button changes the picture, a finished run says so, clean mode
// hides every panel, a blanked screen is black, reduced motion opens chapters finished.
// Drives the App headless frame by frame, as the window does.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include <imgui.h>
#include <imgui_internal.h>

#include "app/app.h"
#include "app/assets.h"
#include "app/live/job_runner.h"
#include "app/options.h"
#include "app/run/story_run.h"
#include "app/story.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"
#include "app/png_file.h"

using namespace onegpu;
using namespace onegpu::app;

namespace {

constexpr int W = 1280, H = 720;

// An App on an offscreen framebuffer, stepped like the window steps it (0.1 s a frame).
struct Stage {
  render::HeadlessContext ctx;
  ImGuiContext* imgui;
  std::unique_ptr<App> app;
  int w, h;
  render::Framebuffer fb;
  double now = 0.0;

  Stage(const char* id, bool ui, int width = W, int height = H)
      : imgui(ui ? ImGui::CreateContext() : nullptr), w(width), h(height), fb(width, height) {
    Options o;
    app = std::make_unique<App>(find_assets(o), ui, true, 1.0f, find_chapter(id));
    app->set_frame_ms(-1.0f);
    fb.bind();
    app->current().prepare(0.0f);  // its background run, ready (as a class would find it)
  }
  ~Stage() {
    app.reset();
    if (imgui) ImGui::DestroyContext(imgui);
  }
  std::vector<std::uint8_t> run(float seconds) {
    for (float t = 0; t < seconds; t += 0.1f) {
      now += 0.1;
      app->frame(w, h, 0.1f, now);
    }
    return fb.read_rgba();
  }
};

int differing_pixels(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  int n = 0;
  for (std::size_t i = 0; i + 3 < a.size(); i += 4)
    if (std::abs(a[i] - b[i]) + std::abs(a[i + 1] - b[i + 1]) + std::abs(a[i + 2] - b[i + 2]) > 24) ++n;
  return n;
}

void keep(const std::string& name, const std::vector<std::uint8_t>& px) {
  std::filesystem::create_directories(ONEGPU_TEST_OUT);
  save_png(std::string(ONEGPU_TEST_OUT) + "/" + name + ".png", W, H, px);
}

}  // namespace

class ButtonChapter : public ::testing::TestWithParam<const char*> {};

// The chapter stops at its button: long after, the picture is the same; pressing it plays
// what it names, and the picture changes.
TEST_P(ButtonChapter, WaitsForItsButtonAndThePictureChangesAfter) {
  Stage s(GetParam(), false);
  const float hold = s.app->current().waits_for_button_at();
  ASSERT_GE(hold, 0.0f) << GetParam() << " should wait for its button";
  auto waiting = s.run(s.app->current().duration() + 2.0f);
  EXPECT_FLOAT_EQ(s.app->nav().time(), hold);
  EXPECT_FALSE(s.app->animating(s.now));  // waiting is still: the window may sleep
  auto still_waiting = s.run(3.0f);
  EXPECT_EQ(differing_pixels(waiting, still_waiting), 0);
  ASSERT_TRUE(s.app->button_on_screen());
  ASSERT_TRUE(s.app->press_button());
  EXPECT_FALSE(s.app->button_on_screen());  // pressed: it goes, it would do nothing more
  auto after = s.run(s.app->current().duration() - hold + 1.0f);
  keep(std::string("button_") + GetParam() + "_before", waiting);
  keep(std::string("button_") + GetParam() + "_after", after);
  EXPECT_GT(differing_pixels(waiting, after), 2000) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Classroom, ButtonChapter, ::testing::Values("second-gpu", "bigger", "split-experts"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

TEST(Classroom, EnterPressesTheButtonAndReplayWaitsAgain) {
  Stage s("second-gpu", false);
  s.run(5.0f);
  const float hold = s.app->current().waits_for_button_at();
  s.app->nav().apply(Action::PressButton, s.now);
  s.run(1.0f);
  EXPECT_GT(s.app->nav().time(), hold);
  s.app->nav().apply(Action::Replay, s.now);
  s.run(s.app->current().duration() + 1.0f);
  EXPECT_FLOAT_EQ(s.app->nav().time(), hold);
}

TEST(Classroom, TrainButtonGoesOnceTrainingStartsAndTheStatusEndsWithIt) {
  Stage s("train", false);
  s.run(1.0f);
  StoryRun& run = StoryRun::get();
  if (!run.training_started()) {
    EXPECT_TRUE(s.app->button_on_screen());
    EXPECT_TRUE(s.app->press_button());
  }
  EXPECT_FALSE(s.app->button_on_screen());
  run.wait_for_training();
  ASSERT_TRUE(run.training_done());
  s.run(0.5f);
  EXPECT_EQ(s.app->current().activity(), "");  // no "training: step 1000 of 1000" left behind
  EXPECT_FALSE(s.app->button_on_screen());
  // Chapter 28's "Keep training" is gone too once the run exists.
  s.app->nav().go_to(find_chapter("again"));
  s.run(0.2f);
  EXPECT_FALSE(s.app->button_on_screen());
}

TEST(Classroom, CleanModeHidesEveryPanel) {
  Stage s("gpu", true);
  s.run(0.3f);
  const PixelRect with_panels = s.app->scene_rect();
  EXPECT_LT(with_panels.w, W);
  EXPECT_LT(with_panels.h, H);
  s.app->nav().apply(Action::ToggleClean, s.now);
  auto clean = s.run(0.3f);
  const PixelRect r = s.app->scene_rect();
  EXPECT_EQ(r.x, 0);
  EXPECT_EQ(r.y, 0);
  EXPECT_EQ(r.w, W);
  EXPECT_EQ(r.h, H);
  keep("clean_gpu", clean);
  // The status bar's row, bottom left, is the scene's background now, not a panel.
  s.app->nav().apply(Action::ToggleClean, s.now);
  auto panels = s.run(0.3f);
  EXPECT_GT(differing_pixels(clean, panels), 10000);
}

TEST(Classroom, BlankIsBlackAndAnyKeyBringsThePictureBack) {
  Stage s("field", false);
  s.run(1.0f);
  s.app->nav().apply(Action::Blank, s.now);
  auto black = s.run(0.2f);
  int lit = 0;
  for (std::size_t i = 0; i + 3 < black.size(); i += 4) lit += black[i] + black[i + 1] + black[i + 2] > 0;
  EXPECT_EQ(lit, 0);
  s.app->nav().apply(Action::Next, s.now);
  auto back = s.run(0.2f);
  EXPECT_EQ(s.app->nav().index(), find_chapter("field"));  // the key only unblanked
  EXPECT_GT(differing_pixels(black, back), 10000);
}

// Ctrl+S: the frame that writes the PNG asks for the frames its toast needs (the window asks
// again after each frame; before, it slept on the answer from before the PNG, and an idle
// chapter's toast came a second or two late), and stops asking once the toast has gone.
TEST(Classroom, AWrittenPngsToastIsOwedItsFrames) {
  Stage s("field", true);
  s.run(s.app->current().duration() + 0.5f);  // the chapter has finished: nothing moves
  ASSERT_FALSE(s.app->animating(s.now));
  std::filesystem::create_directories(ONEGPU_TEST_OUT);
  const std::string path = std::string(ONEGPU_TEST_OUT) + "/classroom_ctrl_s.png";
  std::filesystem::remove(path);
  s.app->request_png(path);
  s.run(0.1f);
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(s.app->toast_now(s.now), "wrote " + path);
  EXPECT_TRUE(s.app->animating(s.now)) << "the toast is owed its frames";
  s.run(4.5f);
  EXPECT_EQ(s.app->toast_now(s.now), "");
  EXPECT_FALSE(s.app->animating(s.now)) << "and no more once it has gone";
}

TEST(Classroom, ReducedMotionOpensChaptersFinished) {
  Stage s("field", false);
  s.app->nav().apply(Action::ToggleReducedMotion, s.now);
  s.app->nav().apply(Action::Next, s.now);
  s.run(0.1f);
  EXPECT_GE(s.app->nav().time(), s.app->current().duration());  // the first frame is the end state
  s.run(2.0f);  // past the toast that confirms the setting
  EXPECT_FALSE(s.app->animating(s.now));
}

// The key list (F1) opened at a projector's text scale: in front of every panel (ImGui creates
// a window that never comes to the front behind all others), inside the window, and its text
// small enough that nothing is cut off.
// A projector's large text in a small window: the chapter list's titles are whole (the list
// widens, its text shrinks no further than half), the caption's title sits under its first row
// (the list button and the dots) and its text ends inside the panel.
TEST(Classroom, PanelsStayWholeAtAProjectorsTextScaleInASmallWindow) {
  for (const char* id : {"one-of-512", "gradients", "copies"}) {
    SCOPED_TRACE(id);
    Stage s(id, true, 1024, 640);
    for (int i = 0; i < 6; ++i) s.app->nav().apply(Action::ScaleUp, s.now);  // 1.15^6: text x2.3
    s.run(0.3f);
    ImGuiWindow* list = ImGui::FindWindowByName("##chapters");
    ASSERT_NE(list, nullptr);
    ASSERT_TRUE(list->Active);
    EXPECT_LE(list->ContentSizeIdeal.x, list->WorkRect.GetWidth() + 0.5f) << "a chapter title is cut off";
    EXPECT_LT(list->Size.x, 0.35f * 1024.0f) << "the list takes more than a third of the window";
    const App::CaptionDrawn& cap = s.app->caption_drawn();
    EXPECT_GE(cap.title_top, cap.row_bottom) << "the title runs over the list button and the dots";
    EXPECT_GT(cap.text_bottom, cap.title_top);
    EXPECT_LE(cap.text_bottom, cap.panel_bottom) << "the caption's last line is cut off";
  }
}

// A presenter's Ctrl+= in the Lab in a small window stops where the Lab's panels still hold
// their words whole (past it they break words apart), says so, and the story, whose panels
// shrink their text to fit, gets the scale chosen back.
TEST(Classroom, LabTextStopsAtWhatTheWindowTakes) {
  Stage s("gpu", true, 1024, 640);
  s.app->nav().set_lab(true);
  for (int i = 0; i < 10; ++i) s.app->nav().apply(Action::ScaleUp, s.now);  // 1.15^10: about x4
  s.run(0.2f);
  JobRunner::shared().wait_idle([&] { s.app->drain_events(); });
  auto px = s.run(0.2f);
  std::filesystem::create_directories(ONEGPU_TEST_OUT);
  save_png(std::string(ONEGPU_TEST_OUT) + "/lab_text_capped_1024x640.png", 1024, 640, px);
  // 1024 / (32 * 19) = 1.68: the side panel keeps about ten words a line.
  EXPECT_NEAR(s.app->nav().ui_scale(), 1024.0f / (32 * 19), 0.01f);
  EXPECT_NEAR(ImGui::GetFontSize(), std::round(19.0f * 1024.0f / (32 * 19)), 1.0f) << "the fonts were built at the cap";
  s.app->nav().apply(Action::ScaleUp, s.now);
  EXPECT_NE(s.app->nav().toast(s.now).find("at its largest for this window"), std::string::npos);
  s.app->nav().set_lab(false);
  s.run(0.2f);
  EXPECT_GT(s.app->nav().ui_scale(), 3.9f) << "the story's text is the scale chosen";
  EXPECT_GT(ImGui::GetFontSize(), 19.0f * 3.0f);
}

// The chapter list keeps the chapter on show in view at a projector's text size, where the list
// is longer than the window: at the last chapter, and after Home jumps back to the first (which
// once stayed scrolled out of the list: a key after a still frame came with a long frame time).
TEST(Classroom, TheChapterListShowsTheChapterOnShow) {
  Stage s("one-of-512", true, 1920, 1080);
  for (int i = 0; i < 5; ++i) s.app->nav().apply(Action::ScaleUp, s.now);  // text x2
  s.run(0.5f);
  ImGuiWindow* list = ImGui::FindWindowByName("##chapters");
  ASSERT_NE(list, nullptr);
  ASSERT_GT(list->ScrollMax.y, 0.0f) << "the list is longer than the window at this text size";
  EXPECT_GT(list->Scroll.y, 0.0f) << "the last chapter is scrolled into view";
  s.app->nav().apply(Action::First, s.now);
  s.now += 5.0;  // a still window: the next frame comes long after the last
  s.app->frame(s.w, s.h, 5.0f, s.now);
  s.run(0.2f);
  EXPECT_EQ(s.app->nav().index(), 0);
  EXPECT_EQ(list->Scroll.y, 0.0f) << "chapter 1's row is scrolled out of the list";
}

TEST(Classroom, KeyListIsInFrontAndFitsAtAProjectorsTextScale) {
  Stage s("gpu", true);
  s.run(0.2f);
  for (int i = 0; i < 4; ++i) s.app->nav().apply(Action::ScaleUp, s.now);
  s.app->nav().apply(Action::ToggleHelp, s.now);
  auto px = s.run(0.4f);
  keep("key_list_scaled", px);
  ImGuiWindow* help = ImGui::FindWindowByName("##help");
  ASSERT_NE(help, nullptr);
  ASSERT_TRUE(help->Active);
  const ImGuiContext& g = *GImGui;
  int help_at = -1, last_panel = -1;
  for (int i = 0; i < g.Windows.Size; ++i) {
    const ImGuiWindow* w = g.Windows[i];
    if (!w->Active || (w->Flags & ImGuiWindowFlags_ChildWindow)) continue;
    if (w == help) help_at = i;
    else if (!(w->Flags & ImGuiWindowFlags_Tooltip)) last_panel = i;
  }
  EXPECT_GT(help_at, last_panel) << "a panel is drawn over the key list";
  EXPECT_GE(help->Pos.x, 0.0f);
  EXPECT_GE(help->Pos.y, 0.0f);
  EXPECT_LE(help->Pos.x + help->Size.x, (float)W);
  EXPECT_LE(help->Pos.y + help->Size.y, (float)H);
  EXPECT_EQ(help->ScrollMax.y, 0.0f) << "the key list is cut off at the bottom";
  EXPECT_EQ(help->ScrollMax.x, 0.0f) << "the key list is cut off at the side";
  EXPECT_LT(help->FontWindowScale, 1.0f) << "at this scale the text should have had to shrink";
}
