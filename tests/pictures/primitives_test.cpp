// The renderer's primitives, drawn offscreen and read back pixel by pixel.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "app/assets.h"
#include "render/error.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"
#include "render/palette.h"
#include "render/renderer.h"
#include "pixels.h"

using namespace onegpu;
using namespace onegpu::render;

namespace {

constexpr int W = 400, H = 300;

struct Gl {
  HeadlessContext ctx;
  Renderer r{app::find_assets(app::Options{}).scene};
  Framebuffer fb{W, H};
  std::vector<std::uint8_t> px;
  // A camera in pixel units (y up), so positions in the test read as pixels.
  Camera cam() {
    Camera c;
    c.viewport = {W, H};
    c.height = H;
    c.center = {W / 2.0f, H / 2.0f};
    return c;
  }
  Image draw(const std::function<void(Canvas&)>& f, Camera c) {
    fb.bind();
    r.begin(0, 0, W, H, {0, 0, 0, 1});
    f(r.world());
    r.end(c);
    px = fb.read_rgba();
    return Image{W, H, &px};
  }
  Image draw(const std::function<void(Canvas&)>& f) { return draw(f, cam()); }
};

// Pixel (x, y) in the y-up coordinates the test draws in.
Rgb at(const Image& im, int x, int y) { return im.at(x, H - 1 - y); }

}  // namespace

TEST(Primitives, RoundedBoxFillsOutlinesAndRoundsItsCorners) {
  Gl gl;
  Image im = gl.draw([](Canvas& c) {
    c.box({{100, 100}, {300, 200}}, rgb(0x0000ff), 30.0f, rgb(0xff0000), 6.0f);
  });
  Rgb centre = at(im, 200, 150), edge = at(im, 102, 150), corner = at(im, 101, 101), outside = at(im, 90, 150);
  EXPECT_GT(centre.b, 250);
  EXPECT_LT(centre.r, 5);
  EXPECT_GT(edge.r, 250);  // the outline runs inside the edge
  EXPECT_LT(edge.b, 5);
  EXPECT_LT(corner.r + corner.b, 10);  // rounded away
  EXPECT_LT(outside.r + outside.b, 5);
  // Anti-aliased: a pixel straddling the edge is partly covered.
  Image half = gl.draw([](Canvas& c) { c.box({{100.5f, 100}, {300, 200}}, rgb(0xffffff)); });
  int mid = at(half, 100, 150).r;
  EXPECT_GT(mid, 60);
  EXPECT_LT(mid, 200);
}

TEST(Primitives, HatchingAlternatesAlongTheDiagonal) {
  Gl gl;
  Image im = gl.draw([](Canvas& c) {
    c.hatched({{50, 50}, {350, 250}}, rgb(0x000080), rgb(0xffffff), 20.0f, 6.0f);
  });
  // Walk along a horizontal line: light stripes and dark ground both appear, repeatedly.
  int light = 0, dark = 0, changes = 0;
  bool prev = false;
  for (int x = 60; x < 340; ++x) {
    bool l = at(im, x, 150).r > 200;
    light += l;
    dark += !l;
    if (x > 60 && l != prev) ++changes;
    prev = l;
  }
  EXPECT_GT(light, 40);
  EXPECT_GT(dark, 120);
  EXPECT_GE(changes, 20);  // 280 px at a 20·√2 px period: about 10 stripes, two edges each
}

TEST(Primitives, RingHasAHoleAndAnArcStopsAtItsSweep) {
  Gl gl;
  Image ring = gl.draw([](Canvas& c) { c.ring({200, 150}, 80, 10, rgb(0x00ff00)); });
  EXPECT_GT(at(ring, 200 + 75, 150).g, 250);
  EXPECT_GT(at(ring, 200, 150 - 75).g, 250);
  EXPECT_LT(at(ring, 200, 150).g, 5);        // hole
  EXPECT_LT(at(ring, 200 + 90, 150).g, 5);   // outside
  // Half a ring, counter-clockwise from angle 0: the upper half only.
  Image arc = gl.draw([](Canvas& c) {
    c.ring({200, 150}, 80, 10, rgb(0x00ff00), 0.0f, std::numbers::pi_v<float>);
  });
  EXPECT_GT(at(arc, 200, 150 + 75).g, 250);
  EXPECT_LT(at(arc, 200, 150 - 75).g, 5);
}

TEST(Primitives, LinesHaveWidthAndRoundCaps) {
  Gl gl;
  Image im = gl.draw([](Canvas& c) { c.line({100, 150}, {300, 150}, 10.0f, rgb(0xffff00)); });
  EXPECT_GT(at(im, 200, 150).r, 250);
  EXPECT_GT(at(im, 200, 153).r, 250);
  EXPECT_LT(at(im, 200, 158).r, 5);
  EXPECT_GT(at(im, 98, 150).r, 200);  // the cap reaches past the end point
  EXPECT_LT(at(im, 92, 150).r, 5);
}

TEST(Primitives, GlowFadesWithDistance) {
  Gl gl;
  Image im = gl.draw([](Canvas& c) { c.glow({{180, 130}, {220, 170}}, rgb(0xffffff), 4.0f, 40.0f); });
  int inside = at(im, 200, 150).r, near = at(im, 230, 150).r, far = at(im, 255, 150).r;
  EXPECT_GT(inside, 250);
  EXPECT_GT(near, far);
  EXPECT_GT(far, 0);
  EXPECT_LT(at(im, 290, 150).r, 3);
}

TEST(Primitives, TextStaysCrispWhenTheCameraZoomsIn) {
  Gl gl;
  auto draw_label = [](Canvas& c) { c.text("H", {0.0f, 0.0f}, 1.0f, rgb(0xffffff)); };
  // Count the pixels in the partial-coverage band across the H's left stem, at two zooms:
  // a distance field keeps that band about a pixel wide however large the glyph is drawn.
  auto edge_band = [&](float world_height) {
    Camera c;
    c.viewport = {W, H};
    c.height = world_height;
    c.center = {0.35f, 0.35f};
    Image im = gl.draw(draw_label, c);
    int y = H / 2, band = 0, solid = 0;
    for (int x = 0; x < W; ++x) {
      int v = im.at(x, y).r;
      band += v > 20 && v < 235;
      solid += v >= 235;
    }
    return std::pair{band, solid};
  };
  auto [band_small, solid_small] = edge_band(4.0f);   // glyph ~ 70 px
  auto [band_big, solid_big] = edge_band(0.8f);       // glyph ~ 350 px
  EXPECT_GT(solid_big, solid_small * 3);  // it really got bigger
  EXPECT_LE(band_small, 8);               // four edges along the row, about a pixel each
  EXPECT_LE(band_big, 10);
}

TEST(Primitives, OneDrawCallPerBatchHoweverManyShapes) {
  Gl gl;
  for (int n : {10, 512, 32768}) {
    gl.draw([n](Canvas& c) {
      for (int i = 0; i < n; ++i) c.box(Rect::centered({float(i % 400), float(i / 400 % 300)}, {2, 2}), rgb(0xffffff));
    });
    EXPECT_EQ(gl.r.stats().draw_calls, 1) << n;
    EXPECT_EQ(gl.r.stats().instances, static_cast<std::size_t>(n));
  }
}

TEST(Primitives, MissingShaderOrFontIsNamed) {
  HeadlessContext ctx;
  AssetPaths bad = app::find_assets(app::Options{}).scene;
  bad.shader_dir = "/no/such/dir";
  try {
    Renderer r(bad);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/dir/shape.vert"), std::string::npos) << e.what();
  }
  AssetPaths nofont = app::find_assets(app::Options{}).scene;
  nofont.font = "/no/such/font.otf";
  EXPECT_THROW(Renderer r(nofont), Error);
}

// A veil (Canvas::veil) draws what one translucent box of the ground's colour over the same
// rectangle draws, to a level of 255 (a pixel of bare ground comes out the ground either way,
// up to the blend's rounding): shapes half in and half out of it, a hatched box, an arc, text on
// a layer under it, and text on its own layer, drawn after it and not dimmed. A faint shape
// wholly inside it is left out.
TEST(Primitives, VeilDimsWhatLiesUnderItAsOneBoxWould) {
  Gl gl;
  const glm::vec4 ground = palette::background;
  const Rect veil{{60, 40}, {340, 260}};
  auto scene = [&](bool as_veil) {
    gl.fb.bind();
    gl.r.begin(0, 0, W, H, ground);
    gl.r.set_text_rule(gl.cam(), 0.0f);
    Canvas& c = gl.r.world();
    c.set_layer(0);
    c.text("under", {70, 200}, 30, palette::text);
    c.set_layer(1);
    c.box({{20, 20}, {120, 120}}, palette::lit, 8, palette::text, 3);  // across the veil's corner
    c.hatched({{150, 60}, {250, 160}}, palette::chip_body, palette::weights, 10, 2, 6);
    c.ring({300, 220}, 50, 10, palette::forward, 0.3f, 2.0f);  // out past the top right
    c.box({{200, 180}, {240, 220}}, with_alpha(palette::chip_off, 0.02f));  // faint, inside
    c.line({10, 280}, {390, 10}, 6, palette::backward);
    if (as_veil) c.veil(veil, ground, 0.9f);
    else c.box(veil, with_alpha(ground, 0.9f));
    c.text("over", {200, 90}, 30, palette::text);  // layer 1's text: after the veil
    gl.r.end(gl.cam());
    return std::make_pair(gl.fb.read_rgba(), gl.r.stats().left_out);
  };
  const auto [boxed, boxed_out] = scene(false);
  const auto [veiled, veiled_out] = scene(true);
  int most = 0, differ = 0;
  for (std::size_t i = 0; i < boxed.size(); ++i) {
    const int d = std::abs(int(boxed[i]) - int(veiled[i]));
    most = std::max(most, d);
    differ += d > 0;
  }
  EXPECT_LE(most, 1) << differ << " channels differ";
  EXPECT_EQ(veiled_out, boxed_out + 1) << "the faint box inside the veil is left out";
  // The picture did draw: the line is bright outside the veil and dim under it.
  const Image im{W, H, &veiled};
  EXPECT_GT(at(im, 30, 266).r, 150);
  EXPECT_LT(at(im, 200, 145).r, 60);
  EXPECT_GT(at(im, 200, 145).r, at(im, 320, 120).r) << "under the veil the line still shows a little over the ground";
}

// A big shape partly under a later opaque box is shaded only round it (Canvas::flush cuts its
// quad into the parts outside): the picture is the one drawn when the box is not quite opaque
// (alpha 0.999, so nothing is cut), to a level of 255, for boxes with outlines, hatching, a
// ring, a glow and a box under the panel's corner only; and the cut did happen.
TEST(Primitives, ShapesPartlyUnderAnOpaqueBoxAreCutRoundItWithTheSamePixels) {
  Gl gl;
  auto scene = [&](float panel_alpha) {
    gl.fb.bind();
    gl.r.begin(0, 0, W, H, {0, 0, 0, 1});
    gl.r.set_text_rule(gl.cam(), 0.0f);
    Canvas& c = gl.r.world();
    c.box({{5, 5}, {395, 295}}, with_alpha(palette::weights, 0.1f), 20, with_alpha(palette::text, 0.2f), 3);
    c.hatched({{30, 100}, {370, 200}}, with_alpha(palette::chip_body, 0.5f), palette::weights, 12, 2, 6);
    c.ring({200, 150}, 140, 20, with_alpha(palette::forward, 0.6f));
    c.glow({{100, 60}, {300, 240}}, with_alpha(palette::lit, 0.3f), 10, 30);
    c.box({{230, 170}, {390, 290}}, with_alpha(palette::backward, 0.4f), 8);  // under a corner only
    c.set_layer(1);
    c.box({{80, 70}, {320, 230}}, with_alpha(palette::chip_body, panel_alpha), 10, palette::text, 2);
    gl.r.end(gl.cam());
    return std::make_pair(gl.fb.read_rgba(), gl.r.stats().instances);
  };
  const auto [whole, whole_n] = scene(0.999f);
  const auto [cut, cut_n] = scene(1.0f);
  int most = 0, differ = 0;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    const int d = std::abs(int(whole[i]) - int(cut[i]));
    most = std::max(most, d);
    differ += d > 0;
  }
  EXPECT_LE(most, 1) << differ << " channels differ";
  EXPECT_GT(cut_n, whole_n) << "the shapes under the panel were cut into parts round it";
}
