// The timeline's retained lanes (app/lab/lab_timeline_layer.h): the picture with the layer is
// the picture drawn whole every frame, pixel for pixel, while a step grows op by op (spans
// appended), after a zoom and a pan (drawn again whole) and on a new step; and a frame where
// nothing changed draws nothing into it.
#include <gtest/gtest.h>

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

struct LayerApp {
  render::HeadlessContext ctx;
  ImGuiContext* imgui = ImGui::CreateContext();
  std::unique_ptr<App> app;
  std::unique_ptr<render::Framebuffer> fb;
  double now = 0;
  LayerApp() {
    Options o;
    app = std::make_unique<App>(find_assets(o), true, true, 1.0f, 0);
    app->nav().set_lab(true);
    app->set_frame_ms(-1.0f);
    fb = std::make_unique<render::Framebuffer>(W, H);
  }
  ~LayerApp() {
    fb.reset();
    app.reset();
    ImGui::DestroyContext(imgui);
  }
  void settle() { JobRunner::shared().wait_idle([&] { app->drain_events(); }); }
  std::vector<std::uint8_t> frame(bool retained) {
    fb->bind();
    app->lab().set_retained(retained);
    app->frame(W, H, 0.0f, now);
    return fb->read_rgba();
  }
  // The frame with the layer, then the same frame drawn whole: they must be equal. (The frame
  // after a change is drawn twice first: ImGui sizes a panel's scroll range a frame late.)
  void expect_same(const char* what) {
    frame(true);
    const LabDrawn d = app->lab().drawn();
    const auto kept = frame(true);
    const auto whole = frame(false);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (kept[i] != whole[i] && differ++ < 3)
        ADD_FAILURE() << what << ": at x " << (i / 4) % W << " y " << (i / 4) / W << " channel " << i % 4 << ": "
                      << (int)kept[i] << " kept, " << (int)whole[i] << " drawn whole";
    EXPECT_EQ(differ, 0u) << what << ": bytes that differ between the retained and the whole picture";
    if (differ) {
      std::filesystem::create_directories(ONEGPU_TEST_OUT);
      save_png(std::string(ONEGPU_TEST_OUT) + "/lab_layer_kept.png", W, H, kept);
      save_png(std::string(ONEGPU_TEST_OUT) + "/lab_layer_whole.png", W, H, whole);
    }
    last = d;
  }
  LabDrawn last;
};

TEST(LabLayer, RetainedLanesEqualLanesDrawnWhole) {
  LayerApp t;
  JobRunner& jr = JobRunner::shared();
  jr.configure(lab_train_args({"--pp", "2", "--dp", "2", "--ep", "2", "--microbatches", "2", "--batch", "8", "--seq", "16"}));
  t.settle();
  t.frame(true);  // ImGui settles its layout
  t.frame(true);

  // A step op by op: after the first ops, the frames append (the axis holds while it grows).
  int appended = 0;
  for (int i = 0; i < 24; ++i) {
    jr.step_op();
    t.settle();
    t.expect_same("op by op");
    appended += t.last.lanes_appended;
  }
  EXPECT_GT(appended, 0) << "a growing step appends its new spans";

  // Nothing changed: the layer is only copied.
  t.frame(true);
  EXPECT_EQ(t.app->lab().drawn().lanes_whole + t.app->lab().drawn().lanes_appended, 0);

  // The step finished, then the next one: each starts the lanes again.
  jr.step_whole();
  t.settle();
  t.expect_same("step finished");
  EXPECT_EQ(t.last.lanes_whole, 1) << "the finished step is fitted to the view";
  jr.step_op();
  t.settle();
  t.expect_same("new step");
  EXPECT_EQ(t.last.lanes_whole, 1) << "another step";

  // Zoom with the wheel over the lanes, then pan by dragging: drawn again whole, still equal.
  const LabDrawn d = t.app->lab().drawn();
  ASSERT_GT(d.lanes, 0);
  const float mx = (d.timeline_x0 + d.timeline_x1) * 0.5f, my = (d.lane_y[0].first + d.lane_y[0].second) * 0.5f;
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = {mx, my};
  t.frame(true);
  io.MouseWheel = 1.0f;
  t.frame(true);
  EXPECT_EQ(t.app->lab().drawn().lanes_whole, 1) << "a zoom draws the lanes again";
  io.MouseWheel = 0.0f;
  t.expect_same("zoomed");
  io.MouseDown[0] = true;
  t.frame(true);
  io.MousePos = {mx - 60.0f, my};
  t.frame(true);
  EXPECT_EQ(t.app->lab().drawn().lanes_whole, 1) << "a pan draws the lanes again";
  io.MouseDown[0] = false;
  io.MousePos = {-1.0f, -1.0f};
  t.frame(true);
  t.expect_same("panned");
}

}  // namespace
}  // namespace onegpu::app
