// Chapters 21-23 rendered headless: the walls stand at each pipeline rank's allocator bytes,
// and the gauges' coloured and hatched stretches sit where the real step's ops ran on the
// virtual clock.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "app/chapters/pipeline_chapters.h"
#include "app/headless.h"
#include "app/run/model_memory.h"
#include "app/run/pipeline_step.h"
#include "app/story.h"
#include "render/framebuffer.h"
#include "pixels.h"
#include "shots.h"

using namespace onegpu;
using namespace onegpu::app;
using namespace fills;

namespace {

glm::vec2 px(const HeadlessImage& img, glm::vec2 w) { return img.camera.world_to_pixel(w); }
bool light_blue(Rgb c) { return c.b > 220 && c.g > 170 && c.r > 110 && c.r < 180; }

// Along a gauge, a little under its middle (clear of the microbatch numbers): pixels of work
// (amber or pink) and the x of each, from the gauge's left end.
struct GaugeScan {
  int width = 0;
  std::vector<int> worked;  // 1 where amber or pink
};
GaugeScan scan(const HeadlessImage& img, const render::Rect& r) {
  Image im{img.width, img.height, &img.rgba};
  // A row near the bar's bottom, under the microbatch numbers (they keep to its middle 70%).
  glm::vec2 a = px(img, {r.min.x, r.min.y + 0.1f * r.size().y}), b = px(img, {r.max.x, r.min.y});
  GaugeScan g;
  g.width = int(std::lround(b.x - a.x));
  for (int i = 0; i < g.width; ++i) {
    Rgb p = im.at(int(a.x) + i, int(a.y));
    g.worked.push_back(amber(p) || pink(p));
  }
  return g;
}

}  // namespace

TEST(PipelineChapters, StagesPutEveryWallAtItsRanksBytesUnderCapacity) {
  HeadlessImage img = scene_shot("stages");
  Image im{img.width, img.height, &img.rgba};
  const auto& held = story_pipeline_held_bytes();
  const double cap = double(toy_capacity_bytes());
  ASSERT_EQ(held.size(), 4u);
  // Stage 1 holds the embedding and layers 1-4, stage 2 layers 5-8 and the head: each half of
  // the 8-layer model's blocks, with half the experts.
  EXPECT_EQ(held[0], held[1]);
  EXPECT_EQ(held[2], held[3]);
  EXPECT_LT(held[0] + held[2], story_model_bytes(8)[7].total());
  StagesChapter ch;
  PipeScene sc;
  for (int r = 0; r < 4; ++r) {
    EXPECT_LT(double(held[r]), cap) << "GPU " << r + 1;  // the "fits" mark is drawn from this
    BoxParts b = sc.box(r);
    int x = int(px(img, b.left_wall.center()).x);
    int bottom = int(px(img, {0, b.left_wall.min.y}).y), y = bottom - 5;
    while (y > 0 && lavender(im.at(x, y))) --y;
    float wall_h = b.left_wall.size().y / img.camera.world_per_pixel();
    EXPECT_NEAR(bottom - y, held[r] / cap * wall_h, 5.0) << "GPU " << r + 1;
    // The badge: a light-blue disc on the wall's top.
    render::Rect badge = ch.fits_badge(r);
    glm::vec2 lo = px(img, badge.min), hi = px(img, badge.max);
    int blue = 0;
    for (int yy = int(hi.y); yy < int(lo.y); ++yy)
      for (int xx = int(lo.x); xx < int(hi.x); ++xx) blue += light_blue(im.at(xx, yy));
    EXPECT_GT(blue, 40) << "GPU " << r + 1;
  }
  // GPUs 3 and 4 sit in the field cells right above GPUs 1 and 2.
  EXPECT_NEAR(sc.chip(2).center().x, sc.chip(0).center().x, 1e-6);
  EXPECT_NEAR(sc.chip(2).center().y - sc.chip(0).center().y, FieldLayout::kPitch, 1e-6);
}

TEST(PipelineChapters, WaitGaugesShowTheRealStepsWorkAndIdle) {
  HeadlessImage img = scene_shot("wait");
  WaitChapter ch;
  const PipelineStep& st = ch.step();
  ASSERT_EQ(st.microbatches, 1);
  ASSERT_EQ(int(st.handoffs.size()), WaitChapter::kSends);  // the chapter's length counts on it
  EXPECT_DOUBLE_EQ(st.textbook, 0.5);
  EXPECT_TRUE(std::isfinite(st.loss));
  for (int r = 0; r < 4; ++r) {
    GaugeScan g = scan(img, ch.scene().gauge(r));
    ASSERT_GT(g.width, 200);
    int worked = 0;
    for (int w : g.worked) worked += w;
    // The gauge's hatched share is the rank's idle time on the virtual clock.
    EXPECT_NEAR(1.0 - double(worked) / g.width, st.rank_idle[r], 0.03) << "GPU " << r + 1;
  }
  // Pixel by pixel, the gauge is coloured where one of the rank's ops ran at that moment.
  for (int r = 0; r < 4; ++r) {
    GaugeScan g = scan(img, ch.scene().gauge(r));
    int wrong = 0;
    for (int i = 0; i < g.width; ++i) {
      double at = (i + 0.5) / g.width * st.pipeline_end, px_s = st.pipeline_end / g.width;
      bool ran = false, edge = false;  // pixels on an op's edge are blended: not judged
      for (const PipeOp& o : st.ops) {
        if (o.rank != r) continue;
        ran |= o.begin <= at && at < o.end;
        edge |= std::abs(at - o.begin) < 1.5 * px_s || std::abs(at - o.end) < 1.5 * px_s;
      }
      wrong += !edge && ran != bool(g.worked[i]);
    }
    EXPECT_LE(wrong, 3) << "GPU " << r + 1;
  }
  // Stage 1's wait between its forward and its backward is hatched in the middle.
  double fwd_end = 0, bwd_begin = 1e30;
  for (const PipeSpan& sp : st.spans)
    if (sp.rank == 0) (sp.backward ? bwd_begin = std::min(bwd_begin, sp.begin) : fwd_end = std::max(fwd_end, sp.end));
  ASSERT_LT(fwd_end, bwd_begin);
  GaugeScan g = scan(img, ch.scene().gauge(0));
  EXPECT_FALSE(g.worked[int((fwd_end + bwd_begin) * 0.5 / st.pipeline_end * g.width)]);
}

TEST(PipelineChapters, WaitHatchesTheStageThatIsIdle) {
  WaitChapter ch;
  const PipelineStep& st = ch.step();
  // A moment inside stage 1's wait, while stage 2 works: from the timeline.
  double fwd_end = 0, bwd_begin = 1e30;
  for (const PipeSpan& sp : st.spans)
    if (sp.rank == 0) (sp.backward ? bwd_begin = std::min(bwd_begin, sp.begin) : fwd_end = std::max(fwd_end, sp.end));
  // The middle of stage 2's longest op inside that wait (between ops it may be waiting on its
  // partner GPU's all-to-all, with no layer lit).
  double v = -1, longest = 0;
  for (const PipeOp& o : st.ops)
    if (o.rank == 2 && o.begin >= fwd_end && o.end <= bwd_begin && o.end - o.begin > longest)
      longest = o.end - o.begin, v = 0.5 * (o.begin + o.end);
  ASSERT_GT(v, 0.0);
  float t = ch.chapter_time(v);
  EXPECT_NEAR(ch.virtual_time(t), v, 1e-6 * st.step_end);
  HeadlessImage img = scene_shot("wait", t);
  Image im{img.width, img.height, &img.rgba};
  auto count = [&](int rank, bool (*pred)(Rgb)) {
    BoxParts b = ch.scene().box(rank);
    glm::vec2 lo = px(img, b.slab(0, 4).min), hi = px(img, b.slab(3, 4).max);
    int n = 0;
    for (int y = int(hi.y); y < int(lo.y); ++y)
      for (int x = int(lo.x); x < int(hi.x); ++x) n += pred(im.at(x, y));
    return n;
  };
  auto lit = [](Rgb c) { return amber(c) || pink(c); };
  // The hatch's lines are the waiting grey (0x5a6275).
  auto grey_hatch = [](Rgb c) {
    return std::abs(c.r - 90) < 14 && std::abs(c.g - 98) < 14 && std::abs(c.b - 117) < 14;
  };
  const int hatch0 = count(0, grey_hatch), hatch2 = count(2, grey_hatch);
  EXPECT_EQ(count(0, lit), 0);      // stage 1 does nothing ...
  EXPECT_GT(hatch0, 1000);          // ... and is hatched
  EXPECT_GT(count(2, lit), 200);    // while stage 2 lights the layer it is on
  EXPECT_LT(hatch2 * 10, hatch0);   // and is not hatched (a few edge pixels share the grey)
}

TEST(PipelineChapters, BackToBackComparesMeasuredIdleWithTheTextbook) {
  HeadlessImage img = scene_shot("back-to-back");
  BackToBackChapter ch;
  const double full = ch.compare_full();
  for (int i = 0; i < 3; ++i) {
    const int m = BackToBackChapter::kRuns[i];
    const PipelineStep& run = story_pipeline_step(m);
    EXPECT_EQ(run.microbatches, m);
    EXPECT_NEAR(run.textbook, 1.0 / (m + 1), 1e-12);
    EXPECT_NEAR(run.bubble, 0.5 * (run.stage_idle[0] + run.stage_idle[1]), 1e-12);
    for (int stage = 0; stage < 2; ++stage) {
      // On the shared scale, the coloured pixels are the rank's busy time.
      GaugeScan g = scan(img, ch.compare_gauge(i, stage));
      int worked = 0;
      for (int w : g.worked) worked += w;
      EXPECT_NEAR(double(worked) / g.width, run.busy(stage * 2) / full, 0.03) << "m=" << m << " stage " << stage + 1;
    }
  }
  // The main gauges: two microbatches, forward and backward of different ones overlapping.
  const PipelineStep& two = ch.step();
  bool fwd_with_bwd = false;
  for (const PipeSpan& a : two.spans)
    for (const PipeSpan& b : two.spans)
      fwd_with_bwd |= a.rank == 0 && b.rank == 2 && a.microbatch != b.microbatch && a.backward != b.backward &&
                      a.begin < b.end && b.begin < a.end;
  EXPECT_TRUE(fwd_with_bwd);
  for (int r = 0; r < 4; ++r) {
    GaugeScan g = scan(img, ch.scene().gauge(r));
    int worked = 0;
    for (int w : g.worked) worked += w;
    EXPECT_NEAR(1.0 - double(worked) / g.width, two.rank_idle[r], 0.03) << "GPU " << r + 1;
  }
}
