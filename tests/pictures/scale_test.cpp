// Chapters 24-26 rendered headless: the GPUs on screen are the ranks of the runs behind them
// (how many, where, how full), and the 64-GPU step shows what the engine's timeline says each
// rank was doing at that moment.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "app/chapters/scale_chapters.h"
#include "app/headless.h"
#include "app/run/model_memory.h"
#include "app/run/scale_run.h"
#include "app/scene/gpu_box.h"
#include "app/story.h"
#include "render/framebuffer.h"
#include "render/palette.h"
#include "pixels.h"
#include "shots.h"

using namespace onegpu;
using namespace onegpu::app;

namespace {

Rgb pixel(const HeadlessImage& img, glm::vec2 world) {
  glm::vec2 p = img.camera.world_to_pixel(world);
  Image im{img.width, img.height, &img.rgba};
  return im.at(int(p.x), int(p.y));
}

bool near(Rgb c, glm::vec4 want, int tol = 10) {
  return std::abs(c.r - int(want.r * 255)) <= tol && std::abs(c.g - int(want.g * 255)) <= tol &&
         std::abs(c.b - int(want.b * 255)) <= tol;
}
bool amber(Rgb c) { return near(c, render::palette::forward, 12); }
bool pink(Rgb c) { return near(c, render::palette::backward, 12); }
// Hatching blends its background and its lines: a pixel lies between the two colours.
bool hatch(Rgb c) {
  const glm::vec4 a = render::palette::waiting_bg, z = render::palette::waiting;
  for (float k = 0.0f; k <= 1.0f; k += 0.05f)
    if (near(c, render::mix(a, z, k), 6)) return true;
  return false;
}
std::string str(Rgb c) { return std::to_string(c.r) + "," + std::to_string(c.g) + "," + std::to_string(c.b); }
bool lavender(Rgb c) { return c.r > 140 && c.b > 200 && c.g > 130 && c.g < 190 && c.r < c.b; }

// A layer slab's middle: an opened GPU of the block shows its four slabs there.
bool has_slabs(const HeadlessImage& img, const render::Rect& chip) {
  BoxParts p = box_parts(chip);
  glm::vec2 at{p.slab(1, 4).center().x, p.slab(1, 4).center().y};
  return near(pixel(img, at), render::mix(render::palette::weights, render::palette::chip_body, 0.55f), 14);
}

// Share of the left wall's height that is filled, read off its middle column.
float wall_fill(const HeadlessImage& img, const render::Rect& chip) {
  BoxParts p = box_parts(chip);
  glm::vec2 lo = img.camera.world_to_pixel({p.left_wall.center().x, p.left_wall.min.y});
  glm::vec2 hi = img.camera.world_to_pixel({p.left_wall.center().x, p.left_wall.max.y});
  Image im{img.width, img.height, &img.rgba};
  int top = int(lo.y);
  for (int y = int(lo.y) - 2; y > int(hi.y); --y)
    if (lavender(im.at(int(lo.x), y))) top = y;
  return (lo.y - top) / (lo.y - hi.y);
}

}  // namespace

TEST(ScalePictures, DeeperStacksSixteenOpenedGpusInEightStagesFilledByTheirRanksBytes) {
  HeadlessImage img = scene_shot("deeper");
  ScaleBlock b;
  int opened = 0;
  for (int st = 0; st < ScaleBlock::kStages; ++st)
    for (int col = 0; col < ScaleBlock::kColumns; ++col) {
      const bool slabs = has_slabs(img, b.chip(st, col));
      opened += slabs;
      EXPECT_EQ(slabs, col < 2) << "stage " << st + 1 << " column " << col + 1;
    }
  EXPECT_EQ(opened, 16);
  // Walls stand at each rank's allocator bytes over the toy GPU's capacity.
  const RankBytes& bytes = deeper_bytes();
  ASSERT_EQ(bytes.held.size(), 16u);
  EXPECT_EQ(bytes.layers, 32);
  const double cap = double(toy_capacity_bytes());
  for (int st : {0, 3, 7}) {
    double want = double(bytes.held[st * 2]) / cap;
    EXPECT_LT(want, 1.0) << "stage " << st + 1 << " must fit";
    EXPECT_NEAR(wall_fill(img, b.chip(st, 0)), want, 0.08) << "stage " << st + 1;
  }
  // The first and last stages carry the embedding and the head: more than a middle stage.
  EXPECT_GT(bytes.held[0], bytes.held[6]);
}

TEST(ScalePictures, WiderOpensAllSixtyFourThenClosesEveryLid) {
  ScaleBlock b;
  HeadlessImage open = scene_shot("wider", WiderChapter::kLids - 0.05f);
  HeadlessImage closed = scene_shot("wider");
  int opened = 0, lids = 0, lids_elsewhere = 0;
  for (int st = 0; st < ScaleBlock::kStages; ++st)
    for (int col = 0; col < ScaleBlock::kColumns; ++col) {
      opened += has_slabs(open, b.chip(st, col));
      lids += near(pixel(closed, b.chip(st, col).center()), render::palette::chip_body, 6);
    }
  // Cells of the next block stay empty sockets.
  for (int g = 64; g < 128; ++g)
    lids_elsewhere += near(pixel(closed, b.layout().chip_rect(g).center()), render::palette::chip_body, 6);
  EXPECT_EQ(opened, 64);
  EXPECT_EQ(lids, 64);
  EXPECT_EQ(lids_elsewhere, 0);
  const RankBytes& bytes = wider_bytes();
  ASSERT_EQ(bytes.held.size(), 64u);
  EXPECT_EQ(bytes.experts, 64);
  EXPECT_LT(double(bytes.most()), double(toy_capacity_bytes()));
}

TEST(ScalePictures, StepShowsWhatEveryRankWasDoingThenChartsTheWaitingAndRetonesAll) {
  const PipelineStep& s = scale_step();
  ASSERT_EQ(s.pp, 8);
  ASSERT_EQ(s.dp, 8);
  ScaleBlock b;
  int forward_seen = 0, backward_seen = 0, waiting_seen = 0, beads_seen = 0;
  for (float t : {2.5f, 4.5f, 6.5f}) {
    HeadlessImage img = scene_shot("step-64", t);
    const double v = Step64Chapter::virtual_at(s, t);
    for (int rank = 0; rank < 64; ++rank) {
      const render::Rect chip = b.chip(rank / 8, rank % 8);
      // Low in the cell, clear of the microbatch number.
      Rgb c = pixel(img, {chip.min.x + 0.22f * chip.size().x, chip.min.y + 0.2f * chip.size().y});
      const PipeSpan* sp = s.span_at(rank, v);
      if (!sp) {
        EXPECT_TRUE(hatch(c)) << "rank " << rank << " should be waiting at t=" << t << ": " << str(c);
        ++waiting_seen;
      } else if (sp->backward) {
        EXPECT_TRUE(pink(c)) << "rank " << rank << " should run backward at t=" << t << ": " << str(c);
        ++backward_seen;
      } else {
        EXPECT_TRUE(amber(c)) << "rank " << rank << " should run forward at t=" << t << ": " << str(c);
        ++forward_seen;
      }
    }
    // A bead for every hand-over the engine's sends make at that moment, in its colour.
    Step64Chapter chapter;
    for (const PipeHandoff& h : s.handoffs) {
      if (v < h.sent || v >= h.sent + Step64Chapter::kBeadShow * s.step_end) continue;
      // Within two pixels of where the send puts it (the bead is a few pixels across).
      const glm::vec2 q = img.camera.world_to_pixel(chapter.bead_at(s, h, v));
      Image im{img.width, img.height, &img.rgba};
      bool found = false;
      for (int dy = -2; dy <= 2; ++dy)
        for (int dx = -2; dx <= 2; ++dx) {
          Rgb c = im.at(int(q.x) + dx, int(q.y) + dy);
          found |= h.backward ? pink(c) : amber(c);
        }
      EXPECT_TRUE(found) << "hand-over " << h.from << "→" << h.to << " at t=" << t;
      ++beads_seen;
    }
  }
  EXPECT_GT(beads_seen, 0);
  // The moments chosen show all three: the picture is not one colour.
  EXPECT_GT(forward_seen, 0);
  EXPECT_GT(backward_seen, 0);
  EXPECT_GT(waiting_seen, 0);

  // At the end (same process: the 64-rank step runs once for both checks), the chart is
  // hatched as much as each stage waited and every GPU is re-toned by the update.
  HeadlessImage img = scene_shot("step-64");
  Image im{img.width, img.height, &img.rgba};
  for (int st = 0; st < ScaleBlock::kStages; ++st) {
    const render::Rect row = b.chart_row(st);
    const float x_end = row.min.x + row.size().x * float(s.pipeline_end / s.step_end);
    glm::vec2 a = img.camera.world_to_pixel({row.min.x, row.max.y - 0.04f});
    glm::vec2 z = img.camera.world_to_pixel({x_end, row.max.y - 0.04f});
    int busy = 0, all = 0;
    for (int x = int(a.x) + 1; x < int(z.x) - 1; ++x, ++all) {
      Rgb c = im.at(x, int(a.y));
      busy += amber(c) || pink(c);
    }
    // The row shows the stage's first GPU: its busy share of the pipeline's time.
    const int rank = st * 8;
    double work = 0;
    for (const PipeSpan& sp : s.spans)
      if (sp.rank == rank) work += sp.end - sp.begin;
    EXPECT_NEAR(double(busy) / all, work / s.pipeline_end, 0.05) << "stage " << st + 1;  // a pixel per span edge
    // And what the caption's percentage averages: within a few points of the stage's mean.
    EXPECT_NEAR(1.0 - work / s.pipeline_end, s.stage_waiting[st], 0.05);
  }
  // The update has landed on all 64: every lid is re-toned towards lavender, as none was
  // before the step began.
  HeadlessImage before = scene_shot("step-64", 0.5f);
  int retoned = 0, toned_before = 0;
  for (int rank = 0; rank < 64; ++rank) {
    auto toned = [](Rgb c) { return c.b > 130 && c.r > 90 && c.b > c.g + 30; };
    retoned += toned(pixel(img, b.chip(rank / 8, rank % 8).center()));
    toned_before += toned(pixel(before, b.chip(rank / 8, rank % 8).center()));
  }
  EXPECT_EQ(retoned, 64);
  EXPECT_EQ(toned_before, 0);
  // A measured pipeline bubble: neither empty nor all waiting.
  EXPECT_GT(s.waiting, 0.1);
  EXPECT_LT(s.waiting, 0.9);
}
