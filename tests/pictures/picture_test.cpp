// Renders the built chapters headless and checks from the pixels what each must show.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "app/chapters/field_chapter.h"
#include "app/headless.h"
#include "app/scene/chip.h"
#include "app/scene/field_layout.h"
#include "app/story.h"
#include "render/framebuffer.h"
#include "pixels.h"
#include "app/png_file.h"

using namespace onegpu;
using namespace onegpu::app;

namespace {

HeadlessImage shoot(const char* id, std::optional<float> at = std::nullopt, bool ui = true, int w = 1280,
                     int h = 720) {
  Options o;
  o.headless = true;
  o.width = w;
  o.height = h;
  o.at = at;
  o.no_ui = !ui;
  o.out = "unused.png";
  int index = find_chapter(id);
  EXPECT_GE(index, 0);
  HeadlessImage img = render_headless(o, index);
  // Keep what the tests looked at, for people to look at too.
  std::filesystem::create_directories(ONEGPU_TEST_OUT);
  std::string name = std::string(ONEGPU_TEST_OUT) + "/" + id + (at ? "_" + std::to_string(int(*at * 10)) : "_end") +
                     (ui ? "" : "_noui") + ".png";
  save_png(name, img.width, img.height, img.rgba);
  return img;
}

glm::vec2 to_image(const HeadlessImage& img, glm::vec2 world) {
  return img.camera.world_to_pixel(world) + glm::vec2(img.scene_x, img.scene_y);
}

// The lit compute die of a chip in the field: a light, saturated blue.
bool lit_die(Rgb c) { return c.b > 200 && c.g > 140 && c.r > 90 && c.r < 175 && c.b - c.r > 70; }
// GPU 1's ring: near-white.
bool ring_white(Rgb c) { return c.r > 200 && c.g > 195 && c.b > 180; }

std::vector<Blob> lit_cells(const HeadlessImage& img) {
  Image im{img.width, img.height, &img.rgba};
  int x1 = img.scene_x + static_cast<int>(img.camera.viewport.x);
  int y1 = img.scene_y + static_cast<int>(img.camera.viewport.y);
  auto all = blobs(im, img.scene_x, img.scene_y, x1, y1, lit_die);
  std::vector<Blob> cells;
  for (auto& b : all)
    if (b.pixels >= 12) cells.push_back(b);  // ignore anti-aliasing specks
  return cells;
}

}  // namespace

TEST(Pictures, FieldEndsWith512SeparateLitCellsOneForEachGpu) {
  HeadlessImage img = shoot("field");
  auto cells = lit_cells(img);
  EXPECT_EQ(cells.size(), 512u);
  // Each lit patch sits on a different GPU's chip.
  FieldLayout layout(512);
  std::set<int> gpus;
  for (const auto& b : cells) {
    glm::vec2 w = img.camera.pixel_to_world(b.centroid - glm::vec2(img.scene_x, img.scene_y));
    int g = layout.gpu_at(w);
    EXPECT_GE(g, 0);
    gpus.insert(g);
  }
  EXPECT_EQ(gpus.size(), 512u);
}

TEST(Pictures, FieldStartsDarkAndRipplesOutFromGpuOne) {
  auto dark = lit_cells(shoot("field", 0.3f));
  EXPECT_EQ(dark.size(), 0u);

  // GPU 1 alone, before the ripple.
  HeadlessImage one = shoot("field", FieldTimeline::kRippleStart - 0.1f);
  auto first = lit_cells(one);
  ASSERT_EQ(first.size(), 1u);
  glm::vec2 g1 = to_image(one, FieldLayout(512).cell(0).center);
  EXPECT_LT(glm::length(first[0].centroid - g1), 6.0f);

  // Mid-ripple: some on, some off, and every lit cell nearer GPU 1 than every dark one.
  HeadlessImage mid = shoot("field", FieldTimeline::kRippleStart + FieldTimeline::kRippleSpan * 0.5f);
  auto lit = lit_cells(mid);
  EXPECT_GT(lit.size(), 20u);
  EXPECT_LT(lit.size(), 500u);
  FieldLayout layout(512);
  glm::vec2 origin = to_image(mid, layout.cell(0).center);
  float farthest_lit = 0.0f;
  for (const auto& b : lit) farthest_lit = std::max(farthest_lit, glm::length(b.centroid - origin));
  std::set<int> lit_gpus;
  for (const auto& b : lit)
    lit_gpus.insert(layout.gpu_at(mid.camera.pixel_to_world(b.centroid - glm::vec2(mid.scene_x, mid.scene_y))));
  float nearest_dark = 1e9f;
  for (const auto& c : layout.cells())
    if (!lit_gpus.count(c.gpu)) nearest_dark = std::min(nearest_dark, glm::length(to_image(mid, c.center) - origin));
  // One switching interval of slack: cells switch on over a short fade, not instantly.
  EXPECT_LT(farthest_lit, nearest_dark + 40.0f);
}

TEST(Pictures, FieldHasARingAroundGpuOneOnly) {
  HeadlessImage img = shoot("field");
  Image im{img.width, img.height, &img.rgba};
  FieldLayout layout(512);
  float r_world = FieldLayout::kChip * 0.5f * std::sqrt(2.0f) + 0.12f;
  auto ring_hits = [&](int gpu) {
    glm::vec2 c = layout.cell(gpu).center;
    int hits = 0;
    for (int k = 0; k < 72; ++k) {
      float a = k * 2.0f * 3.14159265f / 72;
      glm::vec2 p = to_image(img, c + r_world * glm::vec2(std::cos(a), std::sin(a)));
      // The ring is a few pixels wide: look at the pixel and its neighbours.
      bool hit = false;
      for (int dy = -1; dy <= 1 && !hit; ++dy)
        for (int dx = -1; dx <= 1 && !hit; ++dx) hit = ring_white(im.at(int(p.x) + dx, int(p.y) + dy));
      hits += hit;
    }
    return hits;
  };
  EXPECT_GE(ring_hits(0), 70);   // a closed ring
  EXPECT_EQ(ring_hits(9), 0);    // a neighbour has none
  EXPECT_EQ(ring_hits(300), 0);
}

TEST(Pictures, GpuCloseUpShowsMemoryStacksOnBothSidesAndLitTiles) {
  HeadlessImage img = shoot("gpu");
  Image im{img.width, img.height, &img.rgba};
  FieldLayout layout(512);
  ChipParts parts = chip_parts(layout.chip_rect(0));
  glm::vec2 die = to_image(img, parts.die.center());
  // The chip fills most of the scene's height.
  float chip_px = to_image(img, parts.body.min).y - to_image(img, parts.body.max).y;
  EXPECT_GT(chip_px, img.camera.viewport.y * 0.5f);

  int left = 0, right = 0;
  for (const auto& s : parts.stacks) {
    glm::vec2 c = to_image(img, s.center());
    // The left edge of each stack is outlined in the memory colour (a light steel blue).
    glm::vec2 edge = to_image(img, {s.min.x, s.center().y});
    bool outlined = false;
    for (int dx = -2; dx <= 2; ++dx) {
      Rgb p = im.at(int(edge.x) + dx, int(edge.y));
      outlined |= p.b > 150 && p.r > 95 && p.r < 160 && p.b > p.r + 30;
    }
    EXPECT_TRUE(outlined) << "stack at " << c.x << "," << c.y;
    // Its inside is the memory fill, darker than the outline.
    Rgb inside = im.at(int(c.x), int(c.y + 3));
    EXPECT_LT(inside.b, 130);
    EXPECT_GT(inside.b, 60);
    (c.x < die.x ? left : right) += outlined;
  }
  EXPECT_EQ(left, 3);
  EXPECT_EQ(right, 3);

  // Every compute tile is lit by the end.
  auto tiles = blobs(im, int(to_image(img, {parts.die.min.x, 0}).x), int(to_image(img, {0, parts.die.max.y}).y),
                     int(to_image(img, {parts.die.max.x, 0}).x), int(to_image(img, {0, parts.die.min.y}).y),
                     lit_die);
  int big = 0;
  for (auto& b : tiles) big += b.pixels > 40;
  EXPECT_EQ(big, 60);
}

TEST(Pictures, GpuTilesLightFromTheCentreOut) {
  // Part-way through, the lit tiles are the central ones.
  HeadlessImage img = shoot("gpu", 2.9f);
  Image im{img.width, img.height, &img.rgba};
  ChipParts parts = chip_parts(FieldLayout(512).chip_rect(0));
  glm::vec2 centre = to_image(img, parts.die.center());
  glm::vec2 corner = to_image(img, parts.die.min + parts.die.size() * glm::vec2(0.08f, 0.05f));
  // The brightest pixel near each point (tiles have gaps between them).
  auto brightest = [&](glm::vec2 p) {
    int best = 0;
    for (int dy = -10; dy <= 10; ++dy)
      for (int dx = -10; dx <= 10; ++dx) best = std::max(best, im.at(int(p.x) + dx, int(p.y) + dy).b);
    return best;
  };
  EXPECT_GT(brightest(centre), brightest(corner) + 40);
}

TEST(Pictures, TwoRendersAreIdentical) {
  for (const char* id : {"field", "gpu"}) {
    HeadlessImage a = shoot(id, 2.0f);
    HeadlessImage b = shoot(id, 2.0f);
    ASSERT_EQ(a.rgba.size(), b.rgba.size());
    EXPECT_TRUE(a.rgba == b.rgba) << id;
  }
}

// The registry has exactly one scene for each chapter of the story.
TEST(Pictures, EveryChapterHasItsOwnScene) {
  for (int i = 0; i < static_cast<int>(story().size()); ++i) {
    EXPECT_NE(make_chapter(i), nullptr) << story()[i].id << " has no scene";
  }
  EXPECT_EQ(scene_count(), static_cast<int>(story().size())) << "a scene whose id is not in the story";
}

TEST(Pictures, FieldIsOneDrawCallForAllCells) {
  HeadlessImage img = shoot("field", std::nullopt, false);
  // Layers hold the cells, GPU 1 and its ring, the label and the counter (text): a handful of
  // calls for 512 chips and thousands of shapes. The cells take a call per run of one kind of
  // shape (render/shape_programs.h): at the end the farthest chips still flash (a glow before
  // each), and those stretches share the general program.
  EXPECT_LE(img.stats.draw_calls, 16);
  EXPECT_GT(img.stats.instances, 512u * 8);
}
