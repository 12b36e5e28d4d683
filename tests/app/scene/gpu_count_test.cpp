// The field's count of GPUs switched on, top right: the field's camera leaves it a band of
// pixels that grows with the text, so that the count stays clear of the chips at any scale and
// window size; without the band, a projector's scale brought it down over them.
#include <gtest/gtest.h>

#include "app/chapters/field_chapter.h"
#include "app/scene/field_layout.h"

namespace onegpu::app {
namespace {

// "GPUs switched on" is about 8 ems at the label's size (15 px a unit of scale).
float label_width(float ui_scale) { return 8.0f * 15.0f * ui_scale; }

bool covers(glm::vec2 viewport, float ui_scale, bool band = true) {
  const FieldLayout layout(512);
  const render::Camera cam =
      band ? field_camera(layout, viewport, ui_scale) : render::Camera::fit(layout.bounds(), viewport, 0.04f);
  const render::Rect box = gpu_count_box(viewport, ui_scale, label_width(ui_scale));
  return gpu_count_covers_field(cam, layout.bounds(), viewport, box);
}

TEST(GpuCount, ClearOfTheFieldAtEveryScaleAndSize) {
  for (float scale : {0.5f, 1.0f, 1.6f, 2.0f, 3.0f})
    for (glm::vec2 vp : {glm::vec2{1310, 700}, glm::vec2{990, 540}, glm::vec2{1880, 860}, glm::vec2{1216, 612},
                         glm::vec2{700, 420}})
      if (gpu_count_band(scale) <= 0.4f * vp.y && label_width(scale) < 0.6f * vp.x) EXPECT_FALSE(covers(vp, scale)) << scale << " " << vp.x << "x" << vp.y;
}

// Past that (text three times as large in a small window) the band stops at 40% of the
// picture, and the count covers the chips: it is drawn on a badge then (draw_gpu_count).
TEST(GpuCount, AtExtremeScalesTheBandStopsAndTheCountCoversTheChips) {
  EXPECT_TRUE(covers({700.0f, 420.0f}, 3.0f));
}

TEST(GpuCount, WithoutItsBandTheCountReachedTheChips) {
  EXPECT_TRUE(covers({1216.0f, 612.0f}, 1.6f, false));  // 1600x900 at 1.6, where it was seen over them
  EXPECT_TRUE(covers({990.0f, 540.0f}, 1.0f, false));   // a 1280x720 window
}

TEST(GpuCount, TheBoxHoldsTheTextAndGrowsWithTheScale) {
  const render::Rect a = gpu_count_box({1310.0f, 700.0f}, 1.0f, 120.0f);
  const render::Rect b = gpu_count_box({1310.0f, 700.0f}, 2.0f, 240.0f);
  EXPECT_LE(a.max.x, 1310.0f);
  EXPECT_LE(a.max.y, 700.0f);
  EXPECT_GE(a.size().x, 120.0f);
  EXPECT_GT(b.size().x, a.size().x);
  EXPECT_GT(b.size().y, a.size().y);
}

}  // namespace
}  // namespace onegpu::app
