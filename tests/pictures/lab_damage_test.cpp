// The Lab's frame kept between frames and drawn again only where it changed (App::draw_lab,
// app/ui/frame_damage.h): every frame is, byte for byte, the same frame drawn whole from the
// same UI and run state, while a step grows op by op, steps finish, the pointer hovers a span
// (a tooltip over the panels), the timeline zooms, another tab opens and the text size changes;
// and most of those frames did draw only part of the window.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include <imgui.h>

#include "app/app.h"
#include "app/assets.h"
#include "app/live/job_runner.h"
#include "app/png_file.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"

namespace onegpu::app {
namespace {

constexpr int W = 1600, H = 900;

struct DamageApp {
  render::HeadlessContext ctx;
  ImGuiContext* imgui = ImGui::CreateContext();
  std::unique_ptr<App> app;
  std::unique_ptr<render::Framebuffer> fb;
  double now = 0;
  int frames = 0, partial = 0;
  long area = 0;  // pixels the last damage-tracked frame drew
  DamageApp() {
    Options o;
    app = std::make_unique<App>(find_assets(o), true, true, 1.0f, 0);
    app->nav().set_lab(true);
    app->set_frame_ms(-1.0f);
    fb = std::make_unique<render::Framebuffer>(W, H);
  }
  ~DamageApp() {
    fb.reset();
    app.reset();
    ImGui::DestroyContext(imgui);
  }
  void settle() { JobRunner::shared().wait_idle([&] { app->drain_events(); }); }
  // A frame drawn where it changed, then the same frame drawn whole: equal, byte for byte.
  void frame(const char* what) {
    fb->bind();
    now += 1.0 / 30.0;
    app->frame(W, H, 1.0f / 30.0f, now);
    const auto kept = fb->read_rgba();
    area = app->lab_damage().area();
    app->redraw_lab_whole(W, H);
    const auto whole = fb->read_rgba();
    ++frames;
    partial += area < (long)W * H;
    std::size_t differ = 0;
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (kept[i] != whole[i] && differ++ < 3)
        ADD_FAILURE() << what << ": at x " << (i / 4) % W << " y " << H - 1 - (i / 4) / W << " (from the top) channel "
                      << i % 4 << ": " << (int)kept[i] << " kept, " << (int)whole[i] << " drawn whole";
    EXPECT_EQ(differ, 0u) << what << ": bytes that differ between the damage-tracked and the whole frame";
    if (differ) {
      std::filesystem::create_directories(ONEGPU_TEST_OUT);
      save_png(std::string(ONEGPU_TEST_OUT) + "/lab_damage_kept.png", W, H, kept);
      save_png(std::string(ONEGPU_TEST_OUT) + "/lab_damage_whole.png", W, H, whole);
    }
  }
};

TEST(LabDamage, FramesDrawnWhereTheyChangedEqualFramesDrawnWhole) {
  DamageApp t;
  JobRunner& jr = JobRunner::shared();
  jr.configure(lab_train_args({"--pp", "2", "--dp", "2", "--ep", "2", "--microbatches", "2", "--batch", "8", "--seq", "16"}));
  t.settle();
  t.frame("first");
  t.frame("settled");
  t.frame("nothing changed");
  // The ranks view's shapes and words are matched like the panels' triangles: a still frame
  // draws next to nothing (the status line's clock may tick).
  EXPECT_LT(t.area, (long)W * H / 100) << "a still frame draws next to nothing";

  long op_area = 0;
  for (int i = 0; i < 12; ++i) {
    jr.step_op();
    t.settle();
    t.frame("op by op");
    if (i > 0) op_area = std::max(op_area, t.area);  // the first op starts a step: the timeline appears
  }
  EXPECT_LT(op_area, (long)W * H / 2) << "an op redraws the chips and spans it changed, not the window";
  jr.step_whole();
  t.settle();
  t.frame("step finished");
  t.frame("after the step");
  jr.step_whole();
  t.settle();
  t.frame("another step");

  // The pointer over the lanes: a tooltip drawn over the panels, then gone.
  const LabDrawn d = t.app->lab().drawn();
  ASSERT_GT(d.lanes, 0);
  ImGuiIO& io = ImGui::GetIO();
  for (float f : {0.3f, 0.5f, 0.7f}) {
    io.MousePos = {d.timeline_x0 + (d.timeline_x1 - d.timeline_x0) * f, (d.lane_y[0].first + d.lane_y[0].second) * 0.5f};
    t.frame("hover");
    t.frame("hover settled");
  }
  io.MouseWheel = 1.0f;
  t.frame("zoom");
  io.MouseWheel = 0.0f;
  t.frame("zoomed");
  io.MousePos = {-1.0f, -1.0f};
  t.frame("pointer gone");

  t.app->lab().set_tab(LabTab::Charts);
  t.frame("charts tab");
  t.frame("charts tab settled");
  t.app->lab().set_tab(LabTab::Timeline);
  t.frame("timeline tab");
  t.frame("timeline tab settled");

  t.app->nav().apply(Action::ScaleUp, t.now);
  t.frame("text size up");
  t.frame("text size up, settled");
  jr.step_op();
  t.settle();
  t.frame("op at the larger text size");

  EXPECT_GT(t.partial, t.frames / 2) << "most frames draw only part of the window";
}

}  // namespace
}  // namespace onegpu::app
