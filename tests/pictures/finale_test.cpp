// Chapters 27-29 read from their pixels: the 512 cells lit where the trainer's plan puts its
// ranks, the sweeping rows and the writing of the real run, GPU 1's share and what it costs.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <string>

#include "app/chapters/finale_chapters.h"
#include "app/assets.h"
#include "app/headless.h"
#include "app/options.h"
#include "app/png_file.h"
#include "app/run/field_plan.h"
#include "app/run/model_memory.h"
#include "app/run/story_run.h"
#include "app/scene/full_size_bars.h"
#include "app/scene/gpu_box.h"
#include "app/story.h"
#include "render/framebuffer.h"
#include "render/headless_context.h"
#include "render/renderer.h"
#include "render/text_rule.h"
#include "pixels.h"
#include "shots.h"

using namespace onegpu;
using namespace onegpu::app;

namespace {

bool on_screen(const HeadlessImage& img, glm::vec2 world) {
  glm::vec2 p = img.camera.world_to_pixel(world);
  return p.x >= 0 && p.y >= 0 && p.x < img.camera.viewport.x && p.y < img.camera.viewport.y;
}
Rgb pixel(const HeadlessImage& img, glm::vec2 world) {
  if (!on_screen(img, world)) return {0, 0, 0};
  glm::vec2 p = img.camera.world_to_pixel(world) + glm::vec2(img.scene_x, img.scene_y);
  return Image{img.width, img.height, &img.rgba}.at(int(p.x), int(p.y));
}

bool lit_blue(Rgb c) { return c.b > 200 && c.g > 140 && c.r > 90 && c.r < 175 && c.b - c.r > 70; }
bool amber(Rgb c) { return c.r > 150 && c.g > 90 && c.b < 120 && c.r > c.b + 60; }
bool pink(Rgb c) { return c.r > 150 && c.g < 150 && c.b > 100 && c.r > c.g + 50; }
bool lavender(Rgb c) { return c.r > 140 && c.b > 200 && c.g > 120 && c.g < 200 && c.r < c.b; }
bool sand(Rgb c) { return c.r > 180 && c.g > 150 && c.b > 100 && c.b < 190 && c.r > c.b + 30; }

// The compute die sits at the chip's centre, between its memory stacks.
glm::vec2 die(const FieldLayout& f, int gpu) { return f.chip_rect(gpu).center(); }

}  // namespace

TEST(Finale, PlanPutsEveryRankInTheCellTheFieldDrawsItIn) {
  const FieldPlan& plan = field_plan();
  ASSERT_EQ(plan.world(), 512);
  EXPECT_EQ(plan.pp(), 8);
  EXPECT_EQ(plan.dp(), 64);
  EXPECT_EQ(plan.ep(), 8);
  FieldLayout field(512);
  std::vector<int> seen(512, 0);
  for (const FieldCell& cell : field.cells()) {
    const int rank = plan.rank_of_cell(cell);
    ASSERT_GE(rank, 0);
    ASSERT_LT(rank, 512);
    ++seen[rank];
    EXPECT_EQ(plan.cell_of_rank(rank), cell.gpu);
    const GpuShare s = plan.share_of_cell(cell);
    EXPECT_EQ(s.stage, cell.stage);                    // a block's rows are the pipeline stages
    EXPECT_EQ(s.first_layer, 4 * cell.stage);          // four of the 32 layers each
    EXPECT_EQ(s.end_layer - s.first_layer, 4);
    EXPECT_EQ(s.first_expert, 8 * cell.column);        // a row's eight GPUs split the 64 experts
    EXPECT_EQ(s.end_expert - s.first_expert, 8);
  }
  for (int r = 0; r < 512; ++r) EXPECT_EQ(seen[r], 1) << "rank " << r;
}

TEST(Finale, GpuOnesShareCostsEighteenBytesAWeightAndFitsTheToyGpu) {
  const GpuShare s = field_plan().share_of_cell(FieldLayout(512).cell(0));
  const ShareBytes b = share_bytes(s);
  EXPECT_EQ(b.total(), 18 * b.params);
  const GpuShare other = field_plan().share_of_cell(FieldLayout(512).cell(9));  // stage 2: no embedding
  EXPECT_LT(share_bytes(other).params, b.params);
  EXPECT_LT(b.total(), toy_capacity_bytes());
}

TEST(Finale, CopiesLightBlockByBlockUntilAll512AreOn) {
  FieldLayout field(512);
  for (float t : {0.1f, CopiesChapter::kCopy + 2.5f * CopiesChapter::kCopyEvery, 6.4f}) {
    HeadlessImage img = scene_shot("copies", t);
    int lit = 0, expected = 0;
    for (const FieldCell& cell : field.cells()) {
      const float on = CopiesChapter::on_at(cell);
      const bool should = on < 0.0f || t >= on + 0.3f;
      const bool sure_off = on >= 0.0f && t < on;
      if (!should && !sure_off) continue;  // switching right now: either is fine
      if (!on_screen(img, die(field, cell.gpu))) continue;  // before the camera has pulled back
      const bool is_lit = lit_blue(pixel(img, die(field, cell.gpu)));
      EXPECT_EQ(is_lit, should) << "gpu " << cell.gpu << " at t=" << t;
      lit += is_lit;
      expected += should;
    }
    EXPECT_EQ(lit, expected);
    EXPECT_GE(lit, 64);
  }
}

TEST(Finale, CopiesOutlineStageOneInEveryBlock) {
  FieldLayout field(512);
  HeadlessImage img = scene_shot("copies", 6.4f);
  int outlined = 0, other = 0;
  // The outline: a box 0.07 out from the chip, its stroke drawn inside that edge.
  const float stroke = std::max(1.5f * img.camera.world_per_pixel(), 0.035f);
  for (const FieldCell& cell : field.cells()) {
    render::Rect r = field.chip_rect(cell.gpu);
    bool ring = amber(pixel(img, {r.center().x, r.max.y + 0.07f - 0.5f * stroke}));
    (cell.stage == 0 ? outlined : other) += ring;
  }
  EXPECT_EQ(outlined, 64);  // the data-parallel copies of stage 1
  EXPECT_EQ(other, 0);
}

TEST(Finale, AgainSweepsForwardUpAndBackwardDownTheStages) {
  FieldLayout field(512);
  // A quarter of the way through the forward half: stage 4 (0-based 3) glows amber everywhere.
  float t = AgainChapter::kSweep + AgainChapter::kPeriod * (3.5f / 16.0f);
  HeadlessImage img = scene_shot("again", t);
  for (const FieldCell& cell : field.cells()) {
    glm::vec2 corner = field.chip_rect(cell.gpu).min + glm::vec2(0.08f);
    ASSERT_EQ(amber(pixel(img, corner)), cell.stage == 3) << "gpu " << cell.gpu;
  }
  // Into the backward half: the correction is at stage 6 (0-based 5) coming down.
  t = AgainChapter::kSweep + AgainChapter::kPeriod * (0.5f + 2.5f / 16.0f);
  img = scene_shot("again", t);
  for (const FieldCell& cell : field.cells()) {
    glm::vec2 corner = field.chip_rect(cell.gpu).min + glm::vec2(0.08f);
    ASSERT_EQ(pink(pixel(img, corner)), cell.stage == 5) << "gpu " << cell.gpu;
  }
}

TEST(Finale, AgainWritesOneLineOfTheRealModelPerTenfold) {
  AgainChapter ch;
  ch.prepare(0.0f);  // the long run, to step 1,000
  const auto ms = StoryRun::get().milestones();
  ASSERT_EQ(ms.size(), 5u);
  const int steps[] = {0, 1, 10, 100, 1000};
  for (int k = 0; k < 5; ++k) EXPECT_EQ(ms[k].step, steps[k]);
  EXPECT_NE(ms[0].sample, ms[4].sample);  // the writing changed with the weights
  // Text rows under the header: one band of bright pixels per line shown.
  render::Rect wa = ch.writing_area();
  for (auto [t, lines] : {std::pair{AgainChapter::kFirstLine + 1.5f * AgainChapter::kLineEvery, 2},
                          std::pair{ch.duration(), 5}}) {
    HeadlessImage img = scene_shot("again", t);
    Image im{img.width, img.height, &img.rgba};
    glm::vec2 top = img.camera.world_to_pixel({wa.min.x, wa.max.y - 2.1f});
    glm::vec2 bottom = img.camera.world_to_pixel({wa.max.x, wa.min.y});
    int bands = 0;
    bool in = false;
    for (int y = int(top.y) + img.scene_y; y < int(bottom.y) + img.scene_y; ++y) {
      bool any = false;
      for (int x = int(top.x) + img.scene_x; x < int(bottom.x) + img.scene_x && !any; ++x) {
        Rgb p = im.at(x, y);
        any = p.r + p.g + p.b > 330;
      }
      bands += any && !in;
      in = any;
    }
    EXPECT_EQ(bands, lines) << "at t=" << t;
  }
}

TEST(Finale, OneOf512OpensGpuOneOnItsFourLayersAndEightExperts) {
  OneOf512Chapter ch;
  HeadlessImage img = scene_shot("one-of-512", ch.duration());
  int tiles = 0;
  for (int l = 0; l < 4; ++l)
    for (int e = 0; e < 8; ++e) tiles += lavender(pixel(img, ch.expert_rect(l, e).center()));
  EXPECT_EQ(tiles, 32);
  // The walls stand at GPU 1's share over the toy capacity: lavender under sand.
  const ShareBytes b = share_bytes(field_plan().share_of_cell(FieldLayout(512).cell(0)));
  BoxParts box = box_parts(FieldLayout(512).chip_rect(0));
  Image im{img.width, img.height, &img.rgba};
  glm::vec2 mid = img.camera.world_to_pixel(box.left_wall.center());
  float y_top = img.camera.world_to_pixel({0, box.left_wall.max.y}).y;
  float y_bottom = img.camera.world_to_pixel({0, box.left_wall.min.y}).y;
  int fill_top = -1, lav_top = -1;
  for (int y = int(y_top); y < int(y_bottom); ++y) {
    Rgb p = im.at(int(mid.x), y);
    if (fill_top < 0 && (sand(p) || lavender(p))) fill_top = y;
    if (lav_top < 0 && lavender(p)) lav_top = y;
  }
  ASSERT_GE(fill_top, 0);
  ASSERT_GE(lav_top, 0);
  const double cap = double(toy_capacity_bytes());
  EXPECT_NEAR(fill_top, y_bottom - float(b.total() / cap) * (y_bottom - y_top), 4.0f);
  EXPECT_NEAR(lav_top, y_bottom - float((b.weights + b.gradients) / cap) * (y_bottom - y_top), 4.0f);
}

TEST(Finale, OneOf512ShowsTheFullSizeShareModelledBesideTheMeasuredOne) {
  OneOf512Chapter ch;
  HeadlessImage img = scene_shot("one-of-512", ch.duration());
  const trainer::ShareFigures& f = ch.full_size_figures();
  // The panel as the picture laid it out: its words at the sizes the rule drew them (1600x900,
  // the picture alone, text scale 1).
  render::HeadlessContext ctx;
  render::Renderer r{find_assets(Options{}).scene};
  r.set_text_rule(img.camera, render::min_label_px(900, 900, 1.0f));
  const FullSizeBars::Layout lay = ch.full_size_layout(r.world(), img.camera.viewport);
  EXPECT_EQ(lay.area.min, ch.full_size_area().min) << "a large picture's panel is its usual size";
  EXPECT_EQ(lay.area.max, ch.full_size_area().max);
  EXPECT_FALSE(lay.stacked) << "a large picture has room for the bars beside the names";
  EXPECT_EQ(lay.detail, FullSizeBars::Detail::Full) << "and for the step's time and traffic in full";
  // Each bar is split where the modelled bytes say: weights (lavender), gradients (pink),
  // optimizer state (sand), activations (amber), from the left.
  for (int i = 0; i < 2; ++i) {
    const trainer::RankFootprint& r = FullSizeBars::row(f, i);
    const render::Rect b = lay.bars[i];
    const float y = b.center().y;
    double at = 0;
    auto mid = [&](trainer::MemCategory c) {
      const double x = at + 0.5 * double(r[c]);
      at += double(r[c]);
      return pixel(img, {FullSizeBars::x_of(lay, x), y});
    };
    EXPECT_TRUE(lavender(mid(trainer::MemCategory::Weights))) << "row " << i;
    EXPECT_TRUE(pink(mid(trainer::MemCategory::Gradients))) << "row " << i;
    EXPECT_TRUE(sand(mid(trainer::MemCategory::Optimizer))) << "row " << i;
    EXPECT_TRUE(amber(mid(trainer::MemCategory::Activations))) << "row " << i;
    // Past the bar's end (and its label's dark patch): no sand.
    EXPECT_FALSE(sand(pixel(img, {FullSizeBars::x_of(lay, double(r.total()) * 1.02), y}))) << "row " << i;
  }
}

// A projector's text in a small window: chapter 28's step count reaches over the field, and a
// badge keeps the chips from showing through its words (as chapter 1's count does); at the
// usual size the count stands beside the field with no badge.
TEST(Finale, AgainsStepCountGetsABadgeWhereItReachesOverTheField) {
  auto chip_pixels = [](const HeadlessImage& img, int x0, int y0, int x1, int y1) {
    Image im{img.width, img.height, &img.rgba};
    int n = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        const Rgb c = im.at(x, y);
        n += c.b > 150 && c.b > c.r + 40;  // the field's lavender chips (the words are grey or white)
      }
    return n;
  };
  Options o;
  o.headless = true;
  o.width = 1024;
  o.height = 640;
  o.ui_scale = 1.6f;
  const HeadlessImage small = render_headless(o, find_chapter("again"));
  save_png(std::string(ONEGPU_TEST_OUT) + "/again_1024x640_x16.png", small.width, small.height, small.rgba);
  // Inside the count's words, right of the list: no chip shows through.
  EXPECT_EQ(chip_pixels(small, 700, 30, 960, 110), 0);
}
