#include "app/chapters/scale_chapters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/chapters/box_chapters.h"
#include "app/run/model_memory.h"
#include "render/palette.h"
#include "render/text_rule.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;

namespace {

float fill_of(const RankBytes* b, int stage, int column) {
  if (!b) return 0.0f;
  const int rank = stage * b->dp + column;  // the trainer's ranks are stage-major
  return static_cast<float>(double(b->held[rank]) / double(toy_capacity_bytes()));
}

std::string pct(double f) {
  char s[16];
  std::snprintf(s, sizeof s, "%.0f%%", 100.0 * f);
  return s;
}

// The bottom band: a check and what the allocators say.
void fits_note(Canvas& c, const ScaleBlock& b, const std::string& head, const RankBytes* bytes, const std::string& what,
               float a, float wpp) {
  if (a <= 0.0f) return;
  Rect bl = b.block();
  glm::vec2 at{bl.min.x + 0.2f, bl.min.y - 0.55f};
  c.veil({{at.x - 0.3f, at.y - 1.0f}, {bl.max.x + 8.0f, at.y + 0.28f}}, palette::background, 0.85f * a);
  draw_check(c, at, 0.2f, a, wpp);
  c.text(head, {at.x + 0.38f, at.y - 0.1f}, 0.3f, with_alpha(palette::text, a), Align::Left);
  std::string line = bytes ? "fullest GPU holds " + format_bytes(bytes->most()) + " of the toy GPU's " +
                                 format_bytes(toy_capacity_bytes()) + " (weights, gradients, optimizer state)"
                           : "measuring…";
  // Lines spaced by the sizes drawn: large text (Ctrl+=) raised both and left them touching.
  const float y_line = std::min(at.y - 0.5f, at.y - 0.1f - render::line_pitch(c.text_size(0.3f), c.text_size(0.19f)));
  c.text(line, {at.x + 0.38f, y_line}, 0.19f, with_alpha(palette::text_dim, a), Align::Left);
  const glm::vec2 at_what{at.x + 0.38f, std::min(y_line - 0.3f, y_line - render::line_pitch(c.text_size(0.19f), c.text_size(0.17f)))};
  const float room = c.text_right() - at_what.x;
  if (!c.fits_right(what, at_what.x, 0.17f) && room > 0.0f)
    // Wrapped under the lines above where it runs past the picture's edge: told on one line it
    // was moved in from the edge, out from under them (by 146 px at 1024x640).
    c.paragraph(what, {at_what.x, at_what.y + c.font().ascent() * c.text_size(0.17f)}, room, 0.17f,
                with_alpha(palette::text_faint, a));
  else
    c.text(what, at_what, 0.17f, with_alpha(palette::text_faint, a), Align::Left);
}

// Shown while what the chapter needs is still running.
void progress_note(Canvas& c, const ScaleBlock& b, bool needed, float a) {
  if (!needed) return;
  std::string s = scale_runs_activity();
  if (s.empty()) s = scale_runs_error();
  else s += "…";
  if (s.empty()) return;
  Rect bl = b.block();
  c.text(s, {bl.max.x + 1.2f, bl.center().y}, 0.24f, with_alpha(palette::forward, a), Align::Left);
}

}  // namespace

// ---- Deeper ----

int DeeperChapter::stages_at(float t) {
  int n = 2;
  while (n < ScaleBlock::kStages && t >= kFirstStage + (n - 2) * kStagePitch + 0.15f) ++n;
  return n;
}

Camera DeeperChapter::camera(glm::vec2 viewport, float t) const {
  return dive(Camera::fit(b_.four_gpus_view(), viewport, 0.02f), Camera::fit(b_.view(), viewport, 0.02f),
              phase(t, 0.3f, kPullBack, Ease::InOutCubic));
}

void DeeperChapter::prepare(float) {
  headless_ = true;
  deeper_bytes();
}

void DeeperChapter::draw(const SceneFrame& f, const Camera& cam) {
  start_scale_runs(headless_ ? ScaleWork::Deeper : ScaleWork::Step);
  Canvas& c = f.world;
  const float t = f.t, wpp = cam.world_per_pixel();
  const RankBytes* bytes = deeper_bytes_ready();
  auto arrive = [&](int stage) {
    return stage < 2 ? 1.0f : phase(t, kFirstStage + (stage - 2) * kStagePitch, 0.45f, Ease::OutCubic);
  };
  int landed = 2;
  while (landed < ScaleBlock::kStages && arrive(landed) >= 1.0f) ++landed;

  c.set_layer(0);
  draw_empty_sockets(c, b_, landed, 2, 0.2f + 0.3f * phase(t, 0.4f, 1.4f, Ease::Smooth), wpp);
  for (int st = 0; st < ScaleBlock::kStages; ++st) {
    float a = arrive(st);
    if (a <= 0.0f) continue;
    for (int col = 0; col < 2; ++col) {
      Rect chip = b_.chip(st, col);
      glm::vec2 rise{0.0f, -(1.0f - a) * 0.35f};  // the stack grows upward
      StageGpuLook look;
      look.fill = fill_of(bytes, st, col) * a;
      look.fade = a;
      if (st == 0 && col == 0 && 0.036f * chip.size().x / wpp > 6.0f)
        look.label = format_bytes(toy_capacity_bytes()) + " · toy GPU";
      draw_stage_gpu(c, {chip.min + rise, chip.max + rise}, st, look, wpp);
    }
  }

  c.set_layer(2);
  // The four GPUs of the pipeline chapters keep their names until the view has pulled back.
  const float names = 1.0f - phase(t, 0.5f, 0.8f);
  for (int g = 0; g < 4 && names > 0.0f; ++g) {
    Rect chip = b_.chip(g / 2, g % 2);
    c.text("GPU " + std::to_string(g + 1), {chip.min.x, chip.min.y - 0.07f}, 0.045f,
           with_alpha(palette::text_dim, names), Align::Left);
  }
  const int shown = stages_at(t);
  draw_stage_labels(c, b_, shown, phase(t, 1.2f, 0.6f));
  draw_gpu_count(c, b_, 2 * shown, phase(t, 1.4f, 0.6f));
  draw_expert_heads(c, b_, 2, 16, 2, phase(t, kBracket, 0.6f));
  draw_left_bracket(c, b_, ScaleBlock::kStages, "Pipeline parallelism · 8 stages", phase(t, kBracket, 0.6f), wpp);
  fits_note(c, b_, "all 32 layers fit", bytes,
            "each of the 16 ranks' allocator, after building the story model grown to 32 layers "
            "(16 experts a layer, split two ways)",
            phase(t, kCheck, 0.5f), wpp);
  progress_note(c, b_, !bytes, phase(t, 1.0f, 0.5f));
  c.set_layer(0);
}

// ---- Wider ----

int WiderChapter::columns_at(float t) {
  int n = 2;
  while (n < ScaleBlock::kColumns && t >= kFirstColumn + (n - 2) * kColumnPitch + 0.15f) ++n;
  return n;
}

Camera WiderChapter::camera(glm::vec2 viewport, float) const { return Camera::fit(b_.view(), viewport, 0.02f); }

void WiderChapter::prepare(float) {
  headless_ = true;
  deeper_bytes();
  wider_bytes();
}

void WiderChapter::draw(const SceneFrame& f, const Camera& cam) {
  start_scale_runs(headless_ ? ScaleWork::Wider : ScaleWork::Step);
  Canvas& c = f.world;
  const float t = f.t, wpp = cam.world_per_pixel();
  const RankBytes *before = deeper_bytes_ready(), *after = wider_bytes_ready();
  auto arrive = [&](int col) {
    return col < 2 ? 1.0f : phase(t, kFirstColumn + (col - 2) * kColumnPitch, 0.4f, Ease::OutCubic);
  };
  int landed = 2;
  while (landed < ScaleBlock::kColumns && arrive(landed) >= 1.0f) ++landed;
  // GPUs 1-16 change model (16 experts a layer to 64): their walls move to the new bytes.
  const float change = phase(t, 0.3f, 1.6f, Ease::InOutCubic);

  c.set_layer(0);
  draw_empty_sockets(c, b_, ScaleBlock::kStages, landed, 0.5f, wpp);
  for (int st = 0; st < ScaleBlock::kStages; ++st)
    for (int col = 0; col < ScaleBlock::kColumns; ++col) {
      float a = arrive(col);
      if (a <= 0.0f) continue;
      Rect chip = b_.chip(st, col);
      glm::vec2 slide{-(1.0f - a) * 0.35f, 0.0f};  // the row widens to the right
      StageGpuLook look;
      look.fill = col < 2 ? lerp(fill_of(before, st, col), fill_of(after, st, col), change) : fill_of(after, st, col);
      look.fade = a;
      look.lid = phase(t, kLids + (st + col) * 0.05f, 0.45f, Ease::InOutCubic);
      draw_stage_gpu(c, {chip.min + slide, chip.max + slide}, st, look, wpp);
    }

  c.set_layer(2);
  const int shown = columns_at(t);
  draw_stage_labels(c, b_, ScaleBlock::kStages, 1.0f);
  draw_left_bracket(c, b_, ScaleBlock::kStages, "Pipeline parallelism · 8 stages", 1.0f, wpp);
  draw_expert_heads(c, b_, ScaleBlock::kColumns, 64, shown, 1.0f);
  draw_gpu_count(c, b_, ScaleBlock::kStages * shown, 1.0f);
  Rect bl = b_.block();
  float note = phase(t, kFirstColumn + 6 * kColumnPitch, 0.6f);
  // On two lines where the one runs past the picture's edge from beside the block (moved in
  // from the edge, it covered the block's last column at 1024x640).
  const char* machine = "one machine of 8 GPUs per stage · 64 experts a layer, 8 on each GPU";
  const glm::vec2 at{bl.max.x + 0.35f, bl.center().y + 0.2f};
  const bool two = !c.fits_right(machine, at.x, 0.24f);
  const float pitch = render::line_pitch(c.text_size(0.24f), c.text_size(0.24f));
  c.veil({{bl.max.x + 0.2f, bl.center().y - 0.45f}, {bl.max.x + 10.0f, bl.center().y + 0.6f + (two ? pitch : 0.0f)}},
         palette::background, 0.85f * note);
  if (two) {
    c.text("one machine of 8 GPUs per stage", {at.x, at.y + pitch}, 0.24f, with_alpha(palette::text, note), Align::Left);
    c.text("64 experts a layer, 8 on each GPU", at, 0.24f, with_alpha(palette::text, note), Align::Left);
  } else {
    c.text(machine, at, 0.24f, with_alpha(palette::text, note), Align::Left);
  }
  c.text("the experts split eight ways inside every stage",
         {at.x, std::min(bl.center().y - 0.2f, at.y - render::line_pitch(c.text_size(0.24f), c.text_size(0.2f)))}, 0.2f,
         with_alpha(palette::text_dim, note), Align::Left);
  fits_note(c, b_, "8 of 64 experts on each GPU: it still fits", after,
            "each of the 64 ranks' allocator, after building the scale model (32 layers, 64 experts of "
            "half the story model's width, top-2)",
            phase(t, kLids - 0.6f, 0.5f), wpp);
  progress_note(c, b_, !after, 1.0f);
  c.set_layer(0);
}

// ---- One step on 64 GPUs ----

double Step64Chapter::virtual_at(const PipelineStep& s, float t) {
  return s.step_end * phase(t, kRun, kRunLength);
}

Camera Step64Chapter::camera(glm::vec2 viewport, float) const { return Camera::fit(b_.view(), viewport, 0.02f); }

void Step64Chapter::prepare(float) {
  headless_ = true;
  scale_step();
}

glm::vec2 Step64Chapter::bead_at(const PipelineStep& s, const PipeHandoff& h, double v) const {
  const float p = ease(Ease::InOutSine, float((v - h.sent) / (kBeadShow * s.step_end)));
  const Rect a = b_.chip(h.from / 8, h.from % 8), z = b_.chip(h.to / 8, h.to % 8);
  // Two lanes, so a microbatch going up and a correction coming down never hide each other.
  const float lane = h.backward ? 0.12f : -0.12f;
  const glm::vec2 from{a.center().x + lane, h.backward ? a.min.y : a.max.y};
  const glm::vec2 to{z.center().x + lane, h.backward ? z.max.y : z.min.y};
  return lerp(from, to, p);
}

namespace {

// A closed GPU coloured by what its rank is doing.
void draw_cell(Canvas& c, const Rect& chip, const PipeSpan* span, bool waiting, float tone, float wpp) {
  const float s = chip.size().x;
  glm::vec4 lid = mix(mix(palette::chip_body, palette::weights, 0.22f), palette::weights, tone);
  c.box(chip, lid, 0.09f * s, palette::chip_edge, std::max(wpp, 0.012f * s));
  Rect in = Rect::centered(chip.center(), chip.size() * 0.8f);
  if (span) {
    c.box(in, span->backward ? palette::backward : palette::forward, 0.06f * s);
    c.text(std::to_string(span->microbatch + 1), {in.center().x, in.center().y - 0.12f * s}, 0.34f * s,
           palette::background, Align::Center);
  } else if (waiting) {
    c.hatched(in, palette::waiting_bg, palette::waiting, 0.12f * s, 0.035f * s, 0.06f * s);
  }
}

void legend(Canvas& c, glm::vec2 at, float a, float wpp) {
  const float h = 0.26f;
  auto swatch = [&](float x, const char* name, int kind) {
    Rect r{{x, at.y}, {x + h * 1.4f, at.y + h}};
    if (kind == 0) c.box(r, with_alpha(mix(palette::chip_body, palette::weights, 0.6f), a), 0.04f);
    if (kind == 1) c.box(r, with_alpha(palette::forward, a), 0.04f);
    if (kind == 2) c.hatched(r, with_alpha(palette::waiting_bg, a), with_alpha(palette::waiting, a), 0.08f, 0.025f, 0.04f);
    if (kind == 3) c.box(r, with_alpha(palette::backward, a), 0.04f);
    return x + h * 1.6f + c.text(name, {x + h * 1.6f, at.y + 0.05f}, 0.22f, with_alpha(palette::text, a), Align::Left) + 0.5f;
  };
  float x = at.x;
  x = swatch(x, "the model (its weights)", 0);
  x = swatch(x, "forward pass", 1);
  x = swatch(x, "waiting", 2);
  swatch(x, "backward pass", 3);
  (void)wpp;
}

}  // namespace

float Step64Chapter::run_clock(float t, bool ready) {
  if (headless_ || !ready) {
    waited_ |= !ready;
    return t;
  }
  if (ready_at_ < 0.0f) ready_at_ = waited_ ? t : 0.0f;  // the step arrived while we watched
  if (t < ready_at_) ready_at_ = 0.0f;                    // replayed: it is ready from the start
  return t - ready_at_;
}

void Step64Chapter::draw(const SceneFrame& f, const Camera& cam) {
  start_scale_runs();
  Canvas& c = f.world;
  const PipelineStep* step = scale_step_ready();
  const float t = run_clock(f.t, step != nullptr), wpp = cam.world_per_pixel();
  const double v = step ? virtual_at(*step, t) : -1.0;
  const bool running = step && v > 0.0 && v < step->pipeline_end;
  // The update re-tones every GPU once the last correction has drained.
  float retone = 0.0f, flash = 0.0f;
  if (step) {
    float drained = kRun + kRunLength * float(step->pipeline_end / step->step_end);
    retone = phase(t, drained, kRetone, Ease::Smooth);
    flash = pulse(t, drained, kRetone);
  }
  const float tone = 0.35f * retone + 0.6f * flash;

  c.set_layer(0);
  draw_empty_sockets(c, b_, ScaleBlock::kStages, ScaleBlock::kColumns, 0.5f * (1.0f - phase(t, 0.0f, 0.8f)), wpp);
  for (int st = 0; st < ScaleBlock::kStages; ++st)
    for (int col = 0; col < ScaleBlock::kColumns; ++col) {
      const int rank = st * ScaleBlock::kColumns + col;
      const PipeSpan* span = running ? step->span_at(rank, v) : nullptr;
      draw_cell(c, b_.chip(st, col), span, running && !span, tone, wpp);
    }

  // Hand-overs: a bead crosses the gap between two stages' GPUs, shown for a short stretch of
  // the step after the send began (the send itself takes microseconds) so the eye can follow.
  if (running) {
    c.set_layer(1);
    for (const PipeHandoff& h : step->handoffs)
      if (v >= h.sent && v < h.sent + kBeadShow * step->step_end)
        c.disc(bead_at(*step, h, v), 0.075f, h.backward ? palette::backward : palette::forward);
  }

  c.set_layer(2);
  draw_stage_labels(c, b_, ScaleBlock::kStages, 1.0f);
  draw_left_bracket(c, b_, ScaleBlock::kStages, "Pipeline parallelism · 8 stages", 1.0f, wpp);
  draw_expert_heads(c, b_, ScaleBlock::kColumns, 64, ScaleBlock::kColumns, 1.0f);
  draw_gpu_count(c, b_, 64, 1.0f);
  Rect bl = b_.block();
  legend(c, {bl.min.x - 3.2f, bl.min.y - 0.75f}, phase(t, 0.3f, 0.6f), wpp);
  if (!step) {
    progress_note(c, b_, true, 1.0f);
    c.set_layer(0);
    return;
  }

  // Chart: the first GPU of every stage on the step's virtual clock, beside its stage's row.
  const float chart_a = phase(t, 0.4f, 0.6f);
  const Rect r0 = b_.chart_row(0);
  const float x0 = r0.min.x, w = r0.size().x;
  auto xv = [&](double vv) { return x0 + w * float(vv / step->step_end); };
  // Over the chart, as far as the picture's right edge: smaller or on two lines if it must.
  const float right = std::max(c.text_right(), r0.max.x);
  c.text_in("GPU 1, 9, 17 … 57, the first of each stage, on the step's virtual clock",
            {{x0, bl.max.y + 0.05f}, {right, bl.max.y + 0.05f + std::max(0.3f, 2.6f * c.min_text())}}, 0.2f,
            with_alpha(palette::text_dim, chart_a), Align::Left);
  const double shown = std::max(0.0, v);
  for (int st = 0; st < ScaleBlock::kStages; ++st) {
    const Rect row = b_.chart_row(st);
    const int rank = st * ScaleBlock::kColumns;
    c.box(row, with_alpha(palette::substrate, chart_a), 0.03f);
    const double hatch_end = std::min(shown, step->pipeline_end);
    if (hatch_end > 0.0)
      c.hatched({row.min, {xv(hatch_end), row.max.y}}, with_alpha(palette::waiting_bg, chart_a),
                with_alpha(palette::waiting, chart_a), 0.1f, 0.028f);
    for (const PipeSpan& sp : step->spans) {
      if (sp.rank != rank || sp.begin >= shown) continue;
      Rect seg{{xv(sp.begin), row.min.y}, {xv(std::min(sp.end, shown)), row.max.y}};
      c.box(seg, with_alpha(sp.backward ? palette::backward : palette::forward, chart_a));
      if (seg.size().x > 0.28f)
        c.text(std::to_string(sp.microbatch + 1), {seg.center().x, seg.min.y + 0.13f}, 0.2f,
               with_alpha(palette::background, chart_a), Align::Center);
    }
    if (shown > step->pipeline_end)  // gradients averaged, then the update
      c.box({{xv(step->pipeline_end), row.min.y}, {xv(shown), row.max.y}},
            with_alpha(mix(palette::chip_body, palette::weights, 0.6f), chart_a));
    if (shown >= step->pipeline_end)
      c.text(pct(step->stage_waiting[st]), {row.max.x + 0.15f, row.min.y + 0.12f}, 0.22f,
             with_alpha(palette::text_dim, chart_a), Align::Left);
  }
  if (v > 0.0 && v < step->step_end) {
    const Rect top = b_.chart_row(ScaleBlock::kStages - 1);
    c.line({xv(v), r0.min.y - 0.1f}, {xv(v), top.max.y + 0.05f}, std::max(1.5f * wpp, 0.02f),
           with_alpha(palette::focus, 0.8f));
  }
  char axis[64];
  std::snprintf(axis, sizeof axis, "%.1f ms", 1e3 * step->step_end);
  c.text("0", {x0, r0.min.y - 0.3f}, 0.18f, with_alpha(palette::text_faint, chart_a), Align::Left);
  c.text(axis, {r0.max.x, r0.min.y - 0.3f}, 0.18f, with_alpha(palette::text_faint, chart_a), Align::Right);
  c.text("waiting", {r0.max.x + 0.15f, r0.min.y - 0.3f}, 0.16f, with_alpha(palette::text_faint, chart_a), Align::Left);

  // What the step measured.
  const float done_a = phase(t, kRun + kRunLength * float(step->pipeline_end / step->step_end), 0.6f);
  char line[240];
  std::snprintf(line, sizeof line,
                "Waiting, measured: %s of the pipeline's time, mean over the 8 stages "
                "(the textbook figure for 8 stages and 8 microbatches: %s)",
                pct(step->waiting).c_str(), pct(step->textbook).c_str());
  // Three paragraphs under the legend, one below the other at whatever size the rule gives; the
  // two notes only while they fit above the picture's bottom edge (a small window keeps the
  // measurement and drops the notes).
  const float px = bl.min.x - 3.2f, width = std::max(right - px, 1.0f), bottom = c.view().visible.min.y;
  float y = c.paragraph(line, {px, bl.min.y - 1.3f + c.font().ascent() * c.text_size(0.22f)}, width, 0.22f,
                        with_alpha(palette::text, done_a));
  std::snprintf(line, sizeof line,
                "A real step of the 32-layer, 64-expert model on 64 virtual ranks: %d texts of %d tokens "
                "(kept short so it runs in seconds), loss %.2f.",
                step->texts, step->seq, step->loss);
  y = std::min(y - 0.08f, bl.min.y - 1.7f + c.font().ascent() * c.text_size(0.18f));
  if (y - c.paragraph_height(line, width, 0.18f) < bottom) {
    c.set_layer(0);
    return;
  }
  y = c.paragraph(line, {px, y}, width, 0.18f, with_alpha(palette::text_dim, chart_a));
  std::snprintf(line, sizeof line,
                "Each op's time: the fastest of %d measured runs on this machine's CPU. Links are modelled: "
                "NVLink inside a machine of 8, InfiniBand between machines.",
                step->measured_runs);
  if (y - 0.02f - c.paragraph_height(line, width, 0.18f) >= bottom)
    c.paragraph(line, {px, y - 0.02f}, width, 0.18f, with_alpha(palette::text_dim, chart_a));
  c.set_layer(0);
}

}  // namespace onegpu::app
