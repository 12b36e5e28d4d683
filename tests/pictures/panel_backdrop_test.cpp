// The story's panels kept between frames (app/ui/panel_backdrop.h): every story frame drawn over
// the kept panels is, byte for byte, the frame cleared and drawn whole (the panels after the
// scene), in chapters that animate, wait for a background run or stand still, with a toast and
// new fonts (the text size changed), the key list over the picture, the chapter list hidden and
// the picture alone; and a frame whose panels did not change draws none of them again.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include <imgui.h>

#include "app/app.h"
#include "app/assets.h"
#include "app/live/job_runner.h"
#include "app/png_file.h"
#include "app/story.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"

namespace onegpu::app {
namespace {

constexpr int W = 1600, H = 900;

struct BackdropApp {
  render::HeadlessContext ctx;
  ImGuiContext* imgui = ImGui::CreateContext();
  std::unique_ptr<App> app;
  std::unique_ptr<render::Framebuffer> fb;
  double now = 100.0;
  BackdropApp() {
    app = std::make_unique<App>(find_assets(Options{}), true, true, 1.0f, 0);
    app->set_frame_ms(-1.0f);
    fb = std::make_unique<render::Framebuffer>(W, H);
    fb->bind();
  }
  ~BackdropApp() {
    fb.reset();
    app.reset();
    ImGui::DestroyContext(imgui);
  }
  std::vector<std::uint8_t> draw(bool kept) {
    app->set_panel_backdrop(kept);
    app->frame(W, H, 0.0f, now);  // no time passes: the same frame each call
    return fb->read_rgba();
  }
  // The frame over the kept panels, then drawn whole, then kept again (from the layer the first
  // left): all three equal, byte for byte.
  void check(const std::string& what) {
    // Settle first: ImGui sizes a new window on its first frame, new fonts land a frame later,
    // and a chapter's background job may still finish (on a loaded machine, after a few frames).
    JobRunner::shared().wait_idle([&] { app->drain_events(); });
    draw(true);
    // A job the chapter posted when it drew (split-experts at its start counts the router's
    // choices): on a loaded machine it ran on between the draws below and the status bar changed.
    JobRunner::shared().wait_idle([&] { app->drain_events(); });
    for (int i = 0; i < 8 && app->panel_backdrop().redrawn() > 0; ++i) draw(true);
    const auto kept = draw(true);
    const auto whole = draw(false);
    const auto again = draw(true);
    EXPECT_EQ(app->panel_backdrop().redrawn(), 0) << what << ": the panels did not change, yet were drawn again";
    for (const auto* other : {&whole, &again}) {
      std::size_t differ = 0;
      for (std::size_t i = 0; i < kept.size(); ++i)
        if (kept[i] != (*other)[i] && differ++ < 3)
          ADD_FAILURE() << what << ": at x " << (i / 4) % W << " y " << H - 1 - (i / 4) / W << " (from the top) channel "
                        << i % 4 << ": " << (int)kept[i] << " kept, " << (int)(*other)[i]
                        << (other == &whole ? " drawn whole" : " kept again");
      EXPECT_EQ(differ, 0u) << what << ": bytes that differ";
      if (differ) {
        std::filesystem::create_directories(ONEGPU_TEST_OUT);
        save_png(std::string(ONEGPU_TEST_OUT) + "/panel_backdrop_kept.png", W, H, kept);
        save_png(std::string(ONEGPU_TEST_OUT) + "/panel_backdrop_other.png", W, H, *other);
      }
    }
  }
};

int chapter_index(const char* id) {
  for (int i = 0; i < static_cast<int>(story().size()); ++i)
    if (story()[i].id == id) return i;
  ADD_FAILURE() << "no chapter " << id;
  return 0;
}

TEST(PanelBackdrop, StoryFramesOverTheKeptPanelsEqualFramesDrawnWhole) {
  BackdropApp t;
  Navigator& nav = t.app->nav();
  for (const char* id : {"open", "weights", "microbatches", "wait", "split-experts"}) {
    const int i = chapter_index(id);
    nav.go_to(i);
    const float end = t.app->chapter(i).duration();
    t.app->chapter(i).prepare(end);  // its background run finished: nothing changes between the draws
    for (float at : {0.0f, 0.5f * end, end}) {
      nav.set_time(at);
      t.check(std::string(id) + " at " + std::to_string(at));
    }
  }
  // Another chapter: its title, caption and place in the list drawn again, not the whole window.
  nav.go_to(chapter_index("gpu"));
  t.draw(true);
  EXPECT_GT(t.app->panel_backdrop().redrawn(), 0);
  EXPECT_LT(t.app->panel_backdrop().redrawn(), (long)W * H / 4);

  nav.apply(Action::ScaleUp, t.now);  // new fonts, and a toast over the picture
  t.check("text size up, its toast");
  nav.apply(Action::ScaleReset, t.now);
  t.now += 60.0;  // past the toast
  t.check("text size back");
  nav.apply(Action::ToggleHelp, t.now);
  t.check("the key list over the picture");
  nav.apply(Action::ToggleHelp, t.now);
  nav.apply(Action::ToggleSidebar, t.now);
  t.check("chapter list hidden");
  nav.apply(Action::ToggleSidebar, t.now);
  nav.apply(Action::ToggleClean, t.now);
  t.check("the picture alone");
  nav.apply(Action::ToggleClean, t.now);
  t.check("panels back");
}

}  // namespace
}  // namespace onegpu::app
