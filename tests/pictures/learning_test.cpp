// The one-GPU and learning chapters, rendered headless: what must be on screen, and that what
// is drawn matches the run it is drawn from (allocator bytes, probabilities, gradient norms).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "app/chapters/box_chapters.h"
#include "app/chapters/dp_chapters.h"
#include "app/chapters/expert_chapters.h"
#include "app/chapters/learning_chapters.h"
#include "app/run/dp_copy.h"
#include "app/run/dp_drift.h"
#include "app/run/dp_step.h"
#include "app/run/ep_traffic.h"
#include "app/run/first_step.h"
#include "app/chapters/split_experts_chapter.h"
#include "app/headless.h"
#include "app/run/model_memory.h"
#include "app/run/story_run.h"
#include "app/scene/field_layout.h"
#include "app/scene/learning_scene.h"
#include "app/story.h"
#include "render/framebuffer.h"
#include "pixels.h"
#include "shots.h"

using namespace onegpu;
using namespace onegpu::app;
using namespace fills;

namespace {

glm::vec2 px(const HeadlessImage& img, glm::vec2 w) { return img.camera.world_to_pixel(w); }


const render::Rect chip() { return FieldLayout(512).chip_rect(0); }

}  // namespace

TEST(Chapters, OpenShowsTwoWallsWithTicksAndTheComputeStrip) {
  HeadlessImage img = scene_shot("open");
  Image im{img.width, img.height, &img.rgba};
  BoxParts b = box_parts(chip());
  for (const render::Rect* wall : {&b.left_wall, &b.right_wall}) {
    // Each wall's outline runs the wall's full height on its outer side.
    glm::vec2 lo = px(img, {wall->min.x, wall->min.y + 0.02f}), hi = px(img, {wall->min.x, wall->max.y - 0.02f});
    int outlined = 0, rows = 0;
    for (int y = int(hi.y); y <= int(lo.y); y += 4, ++rows) {
      bool hit = false;
      for (int dx = -2; dx <= 2; ++dx) {
        Rgb p = im.at(int(lo.x) + dx, y);
        hit |= p.b > 150 && p.r > 95 && p.b > p.r + 30;
      }
      outlined += hit;
    }
    EXPECT_GT(outlined, rows * 9 / 10);
  }
  // The strip glows a light blue.
  Rgb strip = im.at(int(px(img, b.strip.center()).x), int(px(img, b.strip.center()).y));
  EXPECT_GT(strip.b, 120);
}

TEST(Chapters, WeightsFillTheWallsByTheAllocatorsBytes) {
  HeadlessImage img = scene_shot("weights");
  Image im{img.width, img.height, &img.rgba};
  BoxParts b = box_parts(chip());
  // The fill's top, read off the pixels of the left wall's middle column.
  glm::vec2 mid = px(img, b.left_wall.center());
  int top = -1;
  for (int y = int(px(img, {0, b.left_wall.max.y}).y); y < int(px(img, {0, b.left_wall.min.y}).y); ++y)
    if (lavender(im.at(int(mid.x), y))) { top = y; break; }
  ASSERT_GE(top, 0) << "no lavender fill found";
  const auto& bytes = story_model_bytes(4);
  double fraction = double(bytes[3].total()) / double(toy_capacity_bytes());
  // The wall's drawn height runs between its outline lines, a pixel or two inside its rect.
  float y_bottom = px(img, {0, b.left_wall.min.y}).y, y_top = px(img, {0, b.left_wall.max.y}).y;
  float expected = y_bottom - float(fraction) * (y_bottom - y_top);
  EXPECT_NEAR(top, expected, 4.0f);
  EXPECT_GT(fraction, 0.85);  // four layers sit just under the top tick
  EXPECT_LT(fraction, 0.96);
  // 18 bytes a weight, straight from the allocator.
  EXPECT_EQ(bytes[3].total(), 18 * bytes[3].params);
  // Four slabs.
  int slabs = 0;
  for (int l = 0; l < 4; ++l) {
    glm::vec2 c = px(img, b.slab(l, 4).center() + glm::vec2(0.1f * b.s, 0.0f));
    Rgb p = im.at(int(c.x), int(c.y));
    slabs += p.b > 120 && p.r > 80 && p.b > p.g;
  }
  EXPECT_EQ(slabs, 4);
}

TEST(Chapters, NextTokenShowsFourTraysAndThePromptsRealTokens) {
  HeadlessImage img = scene_shot("next-token");
  Image im{img.width, img.height, &img.rgba};
  LearningLayout L = learning_layout(chip());
  StoryRun& run = StoryRun::get();
  ASSERT_EQ(run.trays().size(), 4u);
  EXPECT_EQ(run.trays()[0].text.rfind("Once upon a", 0), 0u);
  // The tokenizer splits the prompt into three tokens; three amber boxes in the first tray.
  EXPECT_EQ(run.trays()[0].tokens[0] + run.trays()[0].tokens[1] + run.trays()[0].tokens[2], "Once upon a");
  render::Rect t0 = L.tray(0);
  glm::vec2 a = px(img, t0.min), b = px(img, t0.max);
  // The boxes' top edges: the row of the tray richest in amber, counted as separate runs.
  int best_row = -1, best = 0;
  for (int y = int(b.y); y < int(a.y); ++y) {
    int n = 0;
    for (int x = int(a.x); x < int(b.x); ++x) n += amber(im.at(x, y));
    if (n > best) { best = n; best_row = y; }
  }
  ASSERT_GE(best_row, 0);
  int outlines = 0, gap = 99;
  for (int x = int(a.x); x < int(b.x); ++x) {
    if (amber(im.at(x, best_row))) {
      if (gap >= 3) ++outlines;
      gap = 0;
    } else {
      ++gap;
    }
  }
  EXPECT_EQ(outlines, 3);
  for (int i = 1; i < 4; ++i) {
    glm::vec2 c = px(img, L.tray(i).center());
    EXPECT_GT(im.at(int(c.x), int(c.y)).b, 30) << "tray " << i;
  }
}

TEST(Chapters, GuessDrawsTheProbesProbabilities) {
  HeadlessImage img = scene_shot("guess");
  StoryRun& run = StoryRun::get();
  // At its end the chapter has run the forward ops and no more: the guess is the head's.
  const FirstStepRun& fs = first_step_run(1);
  LearningChapter guess(LearningScene::Guess);
  const FirstStepView v = view(fs, guess.ops_due(guess.duration()));
  EXPECT_EQ(v.ran, 4);
  ASSERT_FALSE(v.guess.empty());
  const HeadGuess& p = v.guess;
  // Same numbers from the single-text probe, on a fresh model.
  const auto fresh = run.fresh_model();
  auto probe = trainer::next_token_distribution(fresh->model(), run.tokenizer(), kPrompt, 8);
  ASSERT_EQ(probe.size(), p.top.size());
  for (std::size_t i = 0; i < probe.size(); ++i) {
    EXPECT_EQ(probe[i].id, p.top[i].first);
    EXPECT_NEAR(probe[i].prob, p.top[i].second, 1e-6);
  }
  // The "other" bar, the longest, is drawn at its probability's length.
  Image im{img.width, img.height, &img.rgba};
  LearningLayout L = learning_layout(chip());
  const float s = L.s, top = L.chart.max.y - 0.13f * s;
  const float row = (top - L.chart.min.y) / 9.0f;  // 8 tokens + other
  const float x0 = L.chart.min.x + 0.2f * s, full = L.chart.max.x - x0 - 0.14f * s;
  glm::vec2 start = px(img, {x0, top - row * 8.5f});
  int width = 0;
  for (int x = int(start.x) + 1; x < img.width; ++x) {
    Rgb c = im.at(x, int(start.y));
    if (!(c.b > 150 && c.r < 140)) break;
    ++width;
  }
  double shown = 0;
  for (int i = 0; i < 7; ++i) shown += p.top[i].second;
  double other = 1.0 - shown - p.p_target;
  float expected = float(other) * full / img.camera.world_per_pixel();
  EXPECT_NEAR(width, expected, 3.0f);
  // Before training the error for " time" is large: its probability is about one in a vocabulary.
  EXPECT_GT(p.error(), 5.0);
}

TEST(Chapters, GradientsLeaveATickOnEachLayerSizedByItsNorm) {
  HeadlessImage img = scene_shot("gradients");
  Image im{img.width, img.height, &img.rgba};
  BoxParts b = box_parts(chip());
  // Every backward op has run by the chapter's end; the ticks are the layers' probes.
  LearningChapter ch(LearningScene::Gradients);
  const FirstStepView rec = view(first_step_run(1), ch.ops_due(ch.duration()));
  EXPECT_EQ(rec.ran, 8);
  ASSERT_EQ(rec.layer_grads.size(), 4u);
  double mx = 0;
  for (double g : rec.layer_grads) mx = std::max(mx, g);
  for (int l = 0; l < 4; ++l) {
    render::Rect slab = b.slab(l, 4);
    glm::vec2 c = px(img, {slab.max.x - 0.025f * b.s, slab.center().y});
    int h = 0;
    for (int y = int(c.y) - 40; y <= int(c.y) + 40; ++y) h += pink(im.at(int(c.x), y));
    float expected = (0.015f + 0.06f * float(rec.layer_grads[l] / mx)) * b.s / img.camera.world_per_pixel();
    EXPECT_NEAR(h, expected, 4.0f) << "layer " << l + 1;
  }
}

TEST(Chapters, StepUpdatesTheWeightsInTheLoupe) {
  HeadlessImage img = scene_shot("step");
  const FirstStepRun& fs = first_step_run(1);
  LearningChapter ch(LearningScene::Step);
  const FirstStepView rec = view(fs, ch.ops_due(ch.duration()));
  ASSERT_TRUE(rec.updated);
  ASSERT_EQ(rec.last->kind, trainer::EventKind::Update);
  int moved = 0;
  for (int i = 0; i < 16; ++i) moved += fs.loupe_after[i] != fs.loupe_before[i];
  EXPECT_GE(moved, 12);  // AdamW moves nearly every weight (norm gains at their init may not)
  Image im{img.width, img.height, &img.rgba};
  LearningLayout L = learning_layout(chip());
  glm::vec2 a = px(img, L.trays.min), b = px(img, {L.trays.min.x + 0.62f * L.s, L.trays.max.y});
  auto dots = blobs(im, int(a.x), int(b.y), int(b.x), int(a.y), lavender);
  int big = 0;
  for (auto& d : dots) big += d.pixels > 20;
  EXPECT_GE(big, 16);
}

TEST(Chapters, SlowShowsATimeBarOfFourTextsAndTheUpdate) {
  const RunStep* step = warm_step().last_complete();
  ASSERT_NE(step, nullptr);
  int updates = 0, mbs = 0;
  for (const OpSpan& op : step->ops) {
    updates += op.kind == trainer::EventKind::Update;
    if (op.kind != trainer::EventKind::Update) mbs = std::max(mbs, op.microbatch + 1);
    EXPECT_GE(op.vend, op.vbegin);
  }
  EXPECT_EQ(updates, 1);
  EXPECT_EQ(mbs, 4);
  HeadlessImage img = scene_shot("slow");
  (void)img;
}

TEST(Chapters, MicrobatchesRunTwoHalvesThenOneUpdate) {
  HeadlessImage img = scene_shot("microbatches");
  const FirstStepRun& fs = first_step_run(2);
  LearningChapter ch(LearningScene::Microbatches);
  const FirstStepView rec = view(fs, ch.ops_due(ch.duration()));
  EXPECT_EQ(rec.ran, fs.ops());
  int heads = 0, updates = 0;
  for (int i = 0; i < rec.ran; ++i) {
    const OpSpan& op = fs.first().ops[i];
    heads += op.kind == trainer::EventKind::Forward && op.layer == 3;  // the last layer's forward ends in the head
    updates += op.kind == trainer::EventKind::Update;
  }
  EXPECT_EQ(fs.first().microbatch_loss.size(), 2u);
  EXPECT_EQ(heads, 2);    // two microbatches, each with its own loss
  EXPECT_EQ(updates, 1);  // and one update
  // Both half-size trays carry their tick: each microbatch's gradients were added.
  Image im{img.width, img.height, &img.rgba};
  LearningLayout L = learning_layout(chip());
  for (int m = 0; m < 2; ++m) {
    render::Rect r = L.tray(m, 2);
    glm::vec2 a = px(img, {r.max.x - 0.06f * L.s, r.min.y}), b = px(img, r.max);
    int n = 0;
    for (int y = int(b.y); y < int(a.y); ++y)
      for (int x = int(a.x); x < int(b.x); ++x) {
        Rgb p = im.at(x, y);  // the tick, drawn pink, dimmed with its finished tray
        n += p.r > 100 && p.r > p.g + 50 && p.b > p.g + 20;
      }
    EXPECT_GT(n, 10) << "microbatch " << m + 1;
  }
}

TEST(Chapters, TrainReallyTrainsUntilTimeLeads_slow) {
  // The chapter's end state needs the run to step 1,000: this trains it, for real.
  HeadlessImage img = scene_shot("train");
  StoryRun& run = StoryRun::get();
  ASSERT_TRUE(run.training_done());
  EXPECT_EQ(run.trained_steps(), 1000);
  auto ms = run.milestones();
  ASSERT_GE(ms.size(), 5u);  // steps 0, 1, 10, 100, 1000
  EXPECT_EQ(ms.front().step, 0);
  EXPECT_EQ(ms.back().step, 1000);
  EXPECT_EQ(ms.back().top[0].text, " time");
  EXPECT_GT(ms.back().p_time, 0.5);
  EXPECT_LT(ms.back().loss_time, ms.front().loss_time);
  ASSERT_NE(run.trained(), nullptr);  // kept for the chapters that follow
  EXPECT_EQ(run.trained()->steps_done(), 1000);
  // The top bar, " time", reaches most of the way to "certain".
  Image im{img.width, img.height, &img.rgba};
  LearningLayout L = learning_layout(chip());
  const float s = L.s, top = L.chart.max.y - 0.13f * s, row = (top - L.chart.min.y) / 9.0f;
  const float x0 = L.chart.min.x + 0.2f * s, full = L.chart.max.x - x0 - 0.14f * s;
  glm::vec2 start = px(img, {x0, top - row * 0.5f});
  int width = 0;
  for (int x = int(start.x) + 1; x < img.width && amber(im.at(x, int(start.y))); ++x) ++width;
  EXPECT_NEAR(width, float(ms.back().top[0].prob) * full / img.camera.world_per_pixel(), 3.0f);
}

TEST(Chapters, OutOfMemoryOverflowsByTheMeasuredBytesInTwoBands) {
  HeadlessImage img = scene_shot("oom");
  Image im{img.width, img.height, &img.rgba};
  const ModelBytes& m8 = story_model_bytes(8)[7];
  EXPECT_EQ(m8.total(), 18 * m8.params);
  EXPECT_EQ(m8.weights + m8.gradients, 6 * m8.params);  // bf16 weight + fp32 gradient
  EXPECT_EQ(m8.optimizer, 12 * m8.params);              // fp32 master + two fp32 moments
  for (int g = 0; g < 2; ++g) {
    BoxParts b = box_parts(FieldLayout(512).chip_rect(g));
    // Walk up the left wall's middle: lavender, then sand, then past the top of the box.
    int x = int(px(img, b.left_wall.center()).x);
    int bottom = int(px(img, {0, b.left_wall.min.y}).y) - 2;
    int lav = 0, sand = 0, y = bottom;
    for (; y > 0 && lavender(im.at(x, y)); --y) ++lav;
    for (; y > 0; --y) {
      Rgb p = im.at(x, y);
      if (p.r > 180 && p.g > 160 && p.b > 110 && p.b < 180) ++sand;       // sand
      else if (!(p.r > p.b && p.r > 120)) break;                          // past the hatched top
    }
    // Weights and gradients are a third of the climb (6 of 18 bytes); the rest is optimizer
    // state, sand below the box's top and hatched above it.
    EXPECT_GT(sand, 10);
    EXPECT_NEAR(double(lav) / (bottom - y), 1.0 / 3.0, 0.03) << "GPU " << g + 1;
    // The climb ends where the 8-layer model's bytes put it, far past the box's top.
    float wall_h = b.left_wall.size().y / img.camera.world_per_pixel();
    double need = double(m8.total()) / double(toy_capacity_bytes());
    EXPECT_GT(need, 1.5);
    EXPECT_NEAR(bottom - y, need * wall_h, 8.0) << "GPU " << g + 1;
  }
}

TEST(Chapters, InsideALayerLightsTheExpertsTheRouterChose) {
  HeadlessImage img = scene_shot("inside-layer");
  RouterPick pk = InsideLayerChapter::pick();
  ASSERT_EQ(pk.experts.size(), 2u);  // top-2
  EXPECT_NEAR(pk.gates[0] + pk.gates[1], 1.0f, 1e-4f);
  EXPECT_FALSE(pk.token.empty());
  Image im{img.width, img.height, &img.rgba};
  InsideLayerChapter ch;
  render::Rect P = ch.panel(1.0f);
  const float u = P.size().x, h = P.size().y;
  int lit = 0;
  for (int e = 0; e < 16; ++e) {
    float w = (u - 0.06f * u - 7 * 0.015f * u) / 8.0f;
    glm::vec2 corner{P.min.x + 0.03f * u + (e % 8) * (w + 0.015f * u) + 0.1f * w, P.min.y + (0.64f + (e / 8) * 0.25f) * h};
    glm::vec2 q = px(img, corner);
    bool is_lit = amber(im.at(int(q.x), int(q.y)));
    bool chosen = e == pk.experts[0] || e == pk.experts[1];
    EXPECT_EQ(is_lit, chosen) << "expert " << e + 1;
    lit += is_lit;
  }
  EXPECT_EQ(lit, 2);
}

TEST(Chapters, ANewRunDimsTheTraysAndKeepsTheTimeBar) {
  HeadlessImage img = scene_shot("new-run");
  Image im{img.width, img.height, &img.rgba};
  LearningLayout L = learning_layout(chip());
  for (int i = 0; i < 4; ++i) {
    glm::vec2 c = px(img, L.tray(i).center());
    Rgb p = im.at(int(c.x), int(c.y));
    EXPECT_LT(p.r + p.g + p.b, 60) << "tray " << i << " should be an empty outline";
  }
  // The time bar from the last chapter is still there: amber segments along the foot.
  glm::vec2 a = px(img, {L.foot.min.x, L.foot.min.y + 0.025f * L.s});
  int amber_px = 0;
  for (int x = int(a.x); x < int(a.x) + int(1.5f * L.s / img.camera.world_per_pixel()); ++x)
    amber_px += amber(im.at(x, int(a.y))) || (im.at(x, int(a.y)).r > 200 && im.at(x, int(a.y)).b < 120);
  EXPECT_GT(amber_px, 100);
}

TEST(Chapters, SplitExpertsKeepsHalfOnEachGpuAndTheWallsDropByTheMeasuredBytes) {
  HeadlessImage img = scene_shot("split-experts");
  Image im{img.width, img.height, &img.rgba};
  const SplitBytes& bytes = story_expert_split_bytes();
  // Experts hold most of the weights: halving them saves well over a third, measured.
  double saved = 1.0 - double(bytes.split) / double(bytes.replicated);
  EXPECT_GT(saved, 0.35);
  EXPECT_LT(saved, 0.5);
  SplitExpertsChapter ch;
  for (int g = 0; g < 2; ++g) {
    BoxParts b = box_parts(FieldLayout(512).chip_rect(g));
    // The wall's fill top sits at the ep=2 bytes.
    int x = int(px(img, b.left_wall.center()).x);
    int bottom = int(px(img, {0, b.left_wall.min.y}).y), y = bottom - 5;  // above the outline
    while (y > 0 && lavender(im.at(x, y))) --y;
    float wall_h = b.left_wall.size().y / img.camera.world_per_pixel();
    EXPECT_NEAR(bottom - y, double(bytes.split) / double(toy_capacity_bytes()) * wall_h, 5.0) << "GPU " << g + 1;
    // Kept experts are filled; the given-up half is an outline.
    for (int e = 0; e < 16; ++e) {
      glm::vec2 c = px(img, ch.expert_rect(g, 0, e).center());
      bool filled = lavender(im.at(int(c.x), int(c.y)));
      EXPECT_EQ(filled, g == 0 ? e < 8 : e >= 8) << "GPU " << g + 1 << " expert " << e + 1;
    }
  }
}

TEST(Chapters, SyncShowsTheRealAllReduceAndIdenticalCopies) {
  HeadlessImage img = scene_shot("sync");
  const DpStepFacts& dp = story_dp_step();
  EXPECT_TRUE(dp.replicas_equal);  // the "=" is drawn from this check
  EXPECT_GE(dp.allreduce_ops, 1);
  EXPECT_GT(dp.two_allreduce_s, 0.0);
  // Same four texts, same loss, one GPU or two.
  EXPECT_NEAR(dp.loss_two, dp.loss_one, 1e-5 * dp.loss_one);
  // The two-GPU bar ends where its parts add up, on the one-GPU bar's scale.
  Image im{img.width, img.height, &img.rgba};
  SyncChapter ch;
  render::Rect bar = ch.time_bar(1);
  glm::vec2 a = px(img, {bar.min.x, bar.center().y});
  int filled = 0;  // the rightmost pixel of any segment (the empty bar is dark)
  for (int x = int(a.x) + 2; x < int(px(img, {bar.max.x, 0}).x) - 2; ++x) {
    Rgb p = im.at(x, int(a.y));
    if (p.r + p.g + p.b > 200) filled = x - int(a.x);
  }
  double parts = dp.two_compute_s + dp.two_wait_s + dp.two_allreduce_s + dp.two_update_s;
  double want = parts / std::max(parts, dp.one_gpu_s) * (px(img, {bar.max.x, 0}).x - a.x);
  EXPECT_NEAR(filled, want, 8.0);  // (times are measured: no claim here about which is faster)
}

TEST(Chapters, SecondGpuIsFilledByRealBroadcastsAndCheckedEqual) {
  HeadlessImage img = scene_shot("second-gpu");
  const CopyFacts& copy = story_model_copy();
  EXPECT_TRUE(copy.second_empty_before);  // GPU 2 really started empty
  EXPECT_TRUE(copy.equal_after);          // and the broadcasts made it an exact copy
  ASSERT_GE(copy.layers.size(), 4u);
  // The chapter's length comes from the plan alone (it must not wait for the copy's job).
  EXPECT_EQ(static_cast<int>(copy.layers.size()), story_model_copy_broadcasts());
  std::set<int> layers(copy.layers.begin(), copy.layers.end());
  for (int l = 0; l < 4; ++l) EXPECT_TRUE(layers.count(l)) << "layer " << l + 1 << " never copied";
  EXPECT_GT(copy.bytes, 0);
  // The "=" between the GPUs: bright pixels in the gap's middle.
  Image im{img.width, img.height, &img.rgba};
  render::Rect a = FieldLayout(512).chip_rect(0), b = FieldLayout(512).chip_rect(1);
  glm::vec2 mid = px(img, {(a.max.x + b.min.x) * 0.5f, a.center().y});
  int bright = 0;
  for (int y = int(mid.y) - 30; y < int(mid.y) + 10; ++y)
    for (int x = int(mid.x) - 20; x < int(mid.x) + 20; ++x) bright += im.at(x, y).r > 200;
  EXPECT_GT(bright, 40);
}

TEST(Chapters, DifferentTextGivesDifferentGradientsAndAloneTheCopiesDrift) {
  HeadlessImage img = scene_shot("different-text");
  const DriftFacts& d = story_drift();
  EXPECT_TRUE(d.equal_before);
  ASSERT_EQ(d.grad_norm[0].size(), 4u);
  ASSERT_EQ(d.grad_norm[1].size(), 4u);
  int differ = 0;
  for (int l = 0; l < 4; ++l) differ += d.grad_norm[0][l] != d.grad_norm[1][l];
  EXPECT_EQ(differ, 4);  // different texts, different gradients in every layer
  ASSERT_EQ(d.rel_diff.size(), 3u);
  EXPECT_GT(d.rel_diff[0], 0.0);  // one lone update is enough to part them
  EXPECT_GT(d.rel_diff[2], d.rel_diff[0]);  // and they keep drifting
  // At the end the copies are still apart: a pink "≠" between them, no white "=".
  Image im{img.width, img.height, &img.rgba};
  render::Rect a = FieldLayout(512).chip_rect(0), b = FieldLayout(512).chip_rect(1);
  glm::vec2 mid = px(img, {(a.max.x + b.min.x) * 0.5f, a.center().y});
  int white = 0, pinkish = 0;
  for (int y = int(mid.y) - 30; y < int(mid.y) + 10; ++y)
    for (int x = int(mid.x) - 20; x < int(mid.x) + 20; ++x) {
      white += im.at(x, y).r > 200 && im.at(x, y).g > 200;
      pinkish += pink(im.at(x, y));
    }
  EXPECT_LT(white, 10);
  EXPECT_GT(pinkish, 40);
}

TEST(Chapters, TokensCrossByTheRoutersRealChoices) {
  HeadlessImage img = scene_shot("tokens");
  (void)img;
  const Traffic& tr = story_expert_traffic();
  EXPECT_EQ(tr.pairs_per_gpu, 2 * 64 * 2);  // two texts of 64 tokens, two experts each
  for (int g = 0; g < 2; ++g) {
    ASSERT_EQ(tr.crossing[g].size(), 4u);
    for (int n : tr.crossing[g]) {
      EXPECT_GT(n, 0);                  // some tokens always need the other GPU
      EXPECT_LT(n, tr.pairs_per_gpu);   // and some never leave
    }
  }
  // Recount layer 1 for GPU 1 straight from the probe.
  StoryRun& run = StoryRun::get();
  const auto fresh = run.fresh_model();
  const auto& b = run.tray_batch();
  int away = 0;
  for (int text = 0; text < 2; ++text) {
    std::vector<std::int32_t> ids(b.inputs.begin() + text * b.S, b.inputs.begin() + (text + 1) * b.S);
    for (const auto& c : trainer::router_choices(fresh->model(), ids, 0))
      for (auto e : c.experts) away += e >= 8;
  }
  EXPECT_EQ(away, tr.crossing[0][0]);
  // And the engine's all-to-all moved exactly those rows, layer by layer, both ways.
  for (int g = 0; g < 2; ++g) {
    ASSERT_EQ(tr.moved[g].size(), 4u);
    for (int l = 0; l < 4; ++l) EXPECT_EQ(tr.moved[g][l], tr.crossing[g][l]) << "GPU " << g + 1 << " layer " << l + 1;
  }
}

// The step counter says the same thing where two chapters show the same model: chapter 8 ends
// on step 1 and chapter 9 (the same first step, in halves) ends on step 1 too; once chapter 10
// has trained to step 1,000, chapter 11 shows that model, at step 1,000.
TEST(Chapters, StepCountersAgreeAcrossChapters_slow) {
  auto counter = [](const char* id) {
    HeadlessImage img = scene_shot(id);
    LearningLayout L = learning_layout(chip());
    glm::vec2 a = px(img, {L.foot.max.x - 0.45f * L.s, L.foot.max.y}), b = px(img, {L.foot.max.x, L.foot.max.y - 0.06f * L.s});
    std::vector<int> lum;
    for (int y = int(a.y); y < int(b.y); ++y)
      for (int x = int(a.x); x < int(b.x); ++x) {
        const std::uint8_t* p = &img.rgba[(std::size_t(y) * img.width + x) * 4];
        lum.push_back(p[0] + p[1] + p[2] > 450);  // the counter's white text
      }
    return lum;
  };
  auto lit = [](const std::vector<int>& v) { int n = 0; for (int x : v) n += x; return n; };
  const auto step8 = counter("step"), step9 = counter("microbatches");
  EXPECT_GT(lit(step8), 50);
  EXPECT_EQ(step8, step9);
  StoryRun::get().start_training(1000);
  StoryRun::get().wait_for_training();
  const auto step10 = counter("train"), step11 = counter("slow");
  EXPECT_GT(lit(step10), 50);
  EXPECT_EQ(step10, step11);  // "step 1,000" in both
  EXPECT_NE(step10, step8);
}

// A chapter drawn from a recorded run is a function of t alone: the same t twice gives the same
// pixels, mid-step (some ops run, some not) as well as at the end.
TEST(Chapters, LearningChaptersDrawnTwiceAtOneTimeAreIdentical) {
  for (auto [id, at] : {std::pair{"guess", 2.6f}, {"gradients", 2.5f}, {"step", 4.0f}, {"microbatches", 5.2f}, {"slow", 3.0f}}) {
    HeadlessImage a = scene_shot(id, at), b = scene_shot(id, at);
    ASSERT_EQ(a.rgba.size(), b.rgba.size()) << id;
    EXPECT_TRUE(a.rgba == b.rgba) << id << " at " << at;
  }
}
