// The canvas's text rule (render/canvas.h), drawn offscreen and read from the label log: small
// labels are raised to the minimum, labels stay whole on screen, text_in() fits its box.
#include <gtest/gtest.h>

#include "app/assets.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"
#include "render/palette.h"
#include "render/renderer.h"

using namespace onegpu;
using namespace onegpu::render;

namespace {

constexpr int W = 400, H = 300;

// A camera showing half a world unit a pixel: a size of 2 in the test is 4 px on screen.
struct Gl {
  HeadlessContext ctx;
  Renderer r{app::find_assets(app::Options{}).scene};
  Framebuffer fb{W, H};
  Camera cam() {
    Camera c;
    c.viewport = {W, H};
    c.height = H * 0.5f;
    c.center = {W * 0.25f, H * 0.25f};
    return c;
  }
  const LabelLog& draw(float min_px, const std::function<void(Canvas&)>& f) {
    fb.bind();
    r.begin(0, 0, W, H, {0, 0, 0, 1});
    r.set_text_rule(cam(), min_px);
    f(r.world());
    r.end(cam());
    return r.labels();
  }
};

bool inside(const Rect& in, const Rect& out) {
  return in.min.x >= out.min.x - 0.5f && in.min.y >= out.min.y - 0.5f && in.max.x <= out.max.x + 0.5f &&
         in.max.y <= out.max.y + 0.5f;
}

}  // namespace

TEST(TextRule, ASmallLabelIsRaisedToTheMinimumAndABigOneKeptAsAsked) {
  Gl gl;
  const auto& log = gl.draw(14.0f, [](Canvas& c) {
    c.text("tiny", {20, 100}, 2.0f, palette::text);    // 4 px asked
    c.text("large", {20, 50}, 15.0f, palette::text);   // 30 px asked
  });
  ASSERT_EQ(log.labels().size(), 2u);
  EXPECT_FLOAT_EQ(log.labels()[0].em_px, 14.0f);
  EXPECT_FLOAT_EQ(log.labels()[1].em_px, 30.0f);
  EXPECT_FLOAT_EQ(gl.r.world().text_width("tiny", 2.0f), gl.r.world().text_width("tiny", 7.0f))
      << "what a scene measures is what is drawn";
}

TEST(TextRule, ALabelRunningOffTheEdgeIsMovedInAndATooLongOneWraps) {
  Gl gl;
  const Rect screen{{0, 0}, {float(W), float(H)}};
  const auto& log = gl.draw(14.0f, [](Canvas& c) {
    c.text("near the right edge", {180, 100}, 8.0f, palette::text);
    c.text("a sentence far too long to fit on one line of this small picture, at any allowed size", {10, 120}, 8.0f,
           palette::text);
  });
  ASSERT_EQ(log.labels().size(), 2u);
  for (const auto& l : log.labels()) EXPECT_TRUE(inside(l.box, screen)) << l.text;
  EXPECT_EQ(log.labels()[0].lines, 1);
  EXPECT_GT(log.labels()[1].lines, 1);
  EXPECT_GE(log.labels()[1].em_px, 14.0f) << "wrapped, not shrunk under the minimum";
}

TEST(TextRule, TextInShrinksToItsBoxButNotUnderTheMinimum) {
  Gl gl;
  const Rect box{{20, 20}, {80, 40}};  // 120 x 40 px
  bool fits_small = false, fits_long = true;
  const auto& log = gl.draw(14.0f, [&](Canvas& c) {
    fits_small = c.text_fits("Layer 5", box);
    fits_long = c.text_fits("Layer 5 of the eight-layer model", Rect{{20, 20}, {80, 27}});
    c.text_in("Layer 5", box, 30.0f, palette::text);
  });
  EXPECT_TRUE(fits_small);
  EXPECT_FALSE(fits_long) << "a box one line high cannot take it at 14 px";
  ASSERT_EQ(log.labels().size(), 1u);
  const LabelRecord& l = log.labels()[0];
  EXPECT_LT(l.em_px, 60.0f) << "shrunk from the 60 px asked";
  EXPECT_GE(l.em_px, 14.0f);
  EXPECT_TRUE(inside(l.box, l.area)) << l.box.min.x << "," << l.box.min.y << " " << l.box.max.x << "," << l.box.max.y;
}
