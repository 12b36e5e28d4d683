#include "app/chapters/pipeline_scene.h"

#include <algorithm>
#include <cstdio>

#include "app/chapters/box_chapters.h"
#include "app/chapters/split_experts_chapter.h"
#include "app/run/model_memory.h"
#include "render/palette.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;

Rect PipeScene::frame(float right, float below) const {
  Rect a = chip(0), top = chip(3);
  return {{a.min.x - 0.75f, a.min.y - below}, {top.max.x + right, top.max.y + 0.2f}};
}

Rect PipeScene::gauge(int rank) const {
  Rect row = chip(rank - rank % 2 + 1);  // the stage's right-hand GPU
  float x0 = row.max.x + 0.32f, h = 0.1f;  // tall enough for a microbatch's number at the rule's size
  float y = row.center().y + (rank % 2 == 0 ? 0.06f : -0.2f);
  return {{x0, y}, {x0 + 2.3f, y + h}};
}

std::string percent(double fraction) {
  char b[16];
  std::snprintf(b, sizeof b, "%.0f%%", 100.0 * fraction);
  return b;
}

float held_fill(int rank) {
  const auto* held = story_pipeline_held_bytes_ready();
  return held ? static_cast<float>(double((*held)[rank]) / double(toy_capacity_bytes())) : 0.0f;
}

void draw_stage_box(Canvas& c, const PipeScene& sc, int rank, float fill, float fade, float wpp) {
  BoxLook look = loaded_box(4);
  look.first_layer = 4 * (rank / 2);
  look.label_room = 0.4f;  // the experts take the rest of each slab
  look.fill_weights = fill;
  look.fade = fade;
  if (rank != 0) look.capacity_label.clear();
  draw_box(c, sc.box(rank), look, wpp);
  // Each GPU of a stage keeps half the experts of its layers, as in chapter 20: GPUs 1 and 3
  // experts 1-8, GPUs 2 and 4 experts 9-16 (filled), the other half an outline.
  static const SplitExpertsChapter split;  // the same squares as there
  const float s = sc.s(), line = std::max(wpp, 0.003f * s);
  for (int l = 0; l < 4; ++l)
    for (int e = 0; e < 16; ++e) {
      Rect r = split.expert_rect(PipeScene::field_gpu(rank), l, e);
      bool kept = rank % 2 == 0 ? e < 8 : e >= 8;
      c.box(r, with_alpha(palette::weights, (kept ? 0.85f : 0.0f) * fade), 0.002f * s,
            with_alpha(palette::weights, (kept ? 1.0f : 0.5f) * fade), line);
    }
}

void draw_step_on_box(Canvas& c, const PipeScene& sc, int rank, const StepLook& look, float) {
  if (!look.step || look.v < 0.0) return;
  const PipelineStep& st = *look.step;
  BoxParts b = sc.box(rank);
  const float s = b.s;
  const int first = 4 * st.stage_of(rank);
  // Layers holding a microbatch's activations (forward done, backward not yet): a faint amber;
  // the layer an op is working on now: lit, amber going up, pink coming down.
  for (int l = 0; l < 4; ++l) {
    const int layer = first + l;
    bool held = false, now_fwd = false, now_bwd = false;
    for (int mb = 0; mb < st.microbatches; ++mb) {
      bool fwd_done = false, bwd_done = false;
      for (const PipeOp& o : st.ops) {
        if (o.rank != rank || o.microbatch != mb || layer < o.layer_begin || layer >= o.layer_end) continue;
        if (o.begin <= look.v && look.v < o.end) (o.backward ? now_bwd : now_fwd) = true;
        if (o.end <= look.v) (o.backward ? bwd_done : fwd_done) = true;
      }
      held |= fwd_done && !bwd_done;
    }
    Rect r = b.slab(l, 4);
    if (held) c.box(r, with_alpha(palette::forward, 0.22f * look.alpha), 0.012f * s);
    if (now_fwd || now_bwd) {
      glm::vec4 col = now_bwd ? palette::backward : palette::forward;
      c.glow(r, with_alpha(col, 0.5f * look.alpha), 0.012f * s, 0.03f * s);
      c.box(r, with_alpha(col, 0.85f * look.alpha), 0.012f * s);
      draw_layer_label(c, r, layer + 1, s, with_alpha(palette::background, look.alpha), 0.4f);
    }
  }
  // Waiting: inside the pipeline's run, at no moment of any of its microbatches' work.
  bool working = false;
  for (const PipeSpan& sp : st.spans)
    working |= sp.rank == rank && sp.begin <= look.v && look.v < sp.end;
  if (!working && look.v < st.pipeline_end) {
    Rect area{{b.interior.min.x, b.slab(0, 4).min.y - 0.01f * s}, {b.interior.max.x, b.slab(3, 4).max.y + 0.01f * s}};
    c.hatched(area, with_alpha(palette::waiting_bg, 0.75f * look.alpha), with_alpha(palette::waiting, look.alpha),
              0.035f * s, 0.008f * s, 0.012f * s);
    // The word on a dark tag sized to it (the word is never under the rule's size).
    const float size = c.text_size(0.045f * s * kSmallText);
    const Rect tag = Rect::centered(area.center(), {c.text_width("waiting", size) + 0.6f * size, 1.5f * size});
    c.box(tag, with_alpha(palette::background, 0.85f * look.alpha), 0.02f * s);
    c.text_in("waiting", tag, size, with_alpha(palette::text, look.alpha), Align::Center);
  }
}

void draw_handoff(Canvas& c, const PipeScene& sc, const PipeHandoff& h, float progress, float alpha) {
  float p = ease(Ease::InOutSine, progress);
  BoxParts from = sc.box(h.from), to = sc.box(h.to);
  // Up: from the top layer of stage 1 to the bottom layer of stage 2; down the other way.
  glm::vec2 a = h.backward ? from.slab(0, 4).center() : from.slab(3, 4).center();
  glm::vec2 b = h.backward ? to.slab(3, 4).center() : to.slab(0, 4).center();
  glm::vec4 col = h.backward ? palette::backward : palette::forward;
  glm::vec2 at = lerp(a, b, p);
  c.line(a, at, 0.01f * from.s, with_alpha(col, 0.35f * alpha));
  c.disc(at, 0.03f * from.s, with_alpha(col, alpha));
}

void draw_gradients_meet(Canvas& c, const PipeScene& sc, int stage, float amount) {
  if (amount <= 0.0f) return;
  BoxParts a = sc.box(stage * 2), b = sc.box(stage * 2 + 1);
  float gap = (a.chip.max.x + b.chip.min.x) * 0.5f;
  for (int l = 0; l < 4; ++l)
    c.disc({gap, a.slab(l, 4).center().y}, 0.022f * a.s * amount, palette::backward);
}

void draw_gauge(Canvas& c, const Rect& r, const PipelineStep& st, int rank, double v, double full, int cells,
                float alpha, float s, float wpp) {
  if (alpha <= 0.0f || full <= 0.0) return;
  const float line = std::max(wpp, 0.003f * s);
  auto x_of = [&](double sec) { return r.min.x + static_cast<float>(std::clamp(sec / full, 0.0, 1.0)) * r.size().x; };
  c.box(r, with_alpha(palette::waiting_bg, 0.6f * alpha), 0.004f * s, with_alpha(palette::chip_edge, alpha), line);
  const double until = std::min(v, st.pipeline_end);
  if (until > 0.0) {
    // Idle: everything the rank's compute ops leave uncovered, hatched.
    c.hatched({{r.min.x + line, r.min.y + line}, {x_of(until), r.max.y - line}},
              with_alpha(palette::waiting_bg, alpha), with_alpha(palette::waiting, alpha), 0.02f * s, 0.006f * s);
    for (const PipeOp& o : st.ops) {
      if (o.rank != rank || o.begin >= until) continue;
      float x0 = x_of(o.begin), x1 = x_of(std::min(o.end, until));
      c.box({{x0, r.min.y + line}, {std::max(x1, x0 + 0.5f * wpp), r.max.y - line}},
            with_alpha(o.backward ? palette::backward : palette::forward, alpha));
    }
    // Which microbatch each stretch of work belongs to.
    for (const PipeSpan& sp : st.spans) {
      if (sp.rank != rank || sp.end > until) continue;
      float x0 = x_of(sp.begin), x1 = x_of(sp.end);
      std::string n = std::to_string(sp.microbatch + 1);
      // The number sits in the middle of its stretch and leaves a band of the bar's colour above
      // and below it (a digit's ink is about 3/4 of its em); where that cannot be, no number.
      const float size = c.text_size(0.05f * s), ink = 0.75f * size;
      if (ink <= 0.7f * r.size().y && x1 - x0 > c.text_width(n, size) + 0.01f * s)
        c.text(n, {(x0 + x1) * 0.5f, r.center().y - 0.5f * ink}, size, with_alpha(palette::background, alpha),
               Align::Center);
    }
  }
  // Ticks: the gauge fills a cell per tick of the clock.
  for (int i = 1; i < cells; ++i) {
    float x = r.min.x + r.size().x * i / cells;
    c.line({x, r.max.y}, {x, r.max.y + 0.02f * s}, line, with_alpha(palette::text_faint, alpha));
  }
}

void draw_stage_labels(Canvas& c, const PipeScene& sc, float alpha) {
  if (alpha <= 0.0f) return;
  const float s = sc.s();
  for (int stage = 0; stage < 2; ++stage) {
    Rect row = sc.chip(stage * 2);
    float x = row.min.x - 0.08f * s;
    c.line({x + 0.03f * s, row.min.y}, {x + 0.03f * s, row.max.y}, std::max(0.004f * s, 0.002f),
           with_alpha(palette::text_dim, alpha));
    // Two lines, the second under the first at whatever size the rule gives them.
    const float big = c.text_size(0.075f * s), small = c.text_size(0.05f * s * kSmallText);
    const float y = row.center().y + 0.01f * s, y2 = y - std::max(0.09f * s, 0.3f * big + 0.95f * small);
    c.text("Stage " + std::to_string(stage + 1), {x, y}, big, with_alpha(palette::text, alpha), Align::Right);
    c.text(stage == 0 ? "layers 1–4" : "layers 5–8", {x, y2}, small, with_alpha(palette::text_dim, alpha), Align::Right);
  }
}

void draw_gpu_names(Canvas& c, const PipeScene& sc, float alpha) {
  if (alpha <= 0.0f) return;
  for (int r = 0; r < PipeScene::kRanks; ++r) {
    Rect ch = sc.chip(r);
    c.text("GPU " + std::to_string(r + 1), {ch.min.x + 0.02f * sc.s(), ch.min.y - 0.07f * sc.s()}, 0.045f * sc.s() * kSmallText,
           with_alpha(palette::text_dim, alpha));
  }
}

}  // namespace onegpu::app
