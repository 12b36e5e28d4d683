// The field's count of GPUs switched on, top right: clear of the chips at the default text
// size, and known to reach over them (so that it gets its badge) when a projector's scale grows
// the text and shrinks the picture.
#include <gtest/gtest.h>

#include "app/chapters/field_chapter.h"
#include "app/scene/field_layout.h"

namespace onegpu::app {
namespace {

// "GPUs switched on" is about 8 ems at the label's size (15 px a unit of scale).
float label_width(float ui_scale) { return 8.0f * 15.0f * ui_scale; }

bool covers(glm::vec2 viewport, float ui_scale) {
  const FieldLayout layout(512);
  const render::Camera cam = field_camera(layout, viewport);
  const render::Rect box = gpu_count_box(viewport, ui_scale, label_width(ui_scale));
  return gpu_count_covers_field(cam, layout.bounds(), viewport, box);
}

TEST(GpuCount, ClearOfTheFieldAtTheDefaultScale) {
  EXPECT_FALSE(covers({1310.0f, 700.0f}, 1.0f));  // the picture of a 1600x900 window
  EXPECT_FALSE(covers({1880.0f, 860.0f}, 1.0f));  // 1920x1080
}

TEST(GpuCount, ReachesOverTheFieldWhenTheTextIsScaledUp) {
  EXPECT_TRUE(covers({1216.0f, 612.0f}, 1.6f));  // 1600x900 at 1.6, where it was seen over the chips
  EXPECT_TRUE(covers({900.0f, 420.0f}, 2.0f));
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
