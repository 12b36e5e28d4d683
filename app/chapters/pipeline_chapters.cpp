#include "app/chapters/pipeline_chapters.h"

#include <algorithm>
#include <cstdio>

#include "app/chapters/box_chapters.h"
#include "app/chapters/field_chapter.h"
#include "app/chapters/memory_chapters.h"
#include "app/run/model_memory.h"
#include "render/palette.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;

namespace {

void check_mark(Canvas& c, const Rect& r, float width, glm::vec4 col) {
  glm::vec2 a{r.min.x + 0.15f * r.size().x, r.min.y + 0.5f * r.size().y};
  glm::vec2 b{r.min.x + 0.42f * r.size().x, r.min.y + 0.2f * r.size().y};
  glm::vec2 d{r.max.x - 0.12f * r.size().x, r.max.y - 0.15f * r.size().y};
  c.line(a, b, width, col);
  c.line(b, d, width, col);
}

// A bracket under a span of the picture with its title.
void bracket(Canvas& c, float x0, float x1, float y, const std::string& title, float s, float wpp, float alpha) {
  if (alpha <= 0.0f) return;
  glm::vec4 col = with_alpha(palette::text_dim, alpha);
  float lw = std::max(1.5f * wpp, 0.004f * s);
  c.line({x0, y}, {x1, y}, lw, col);
  c.line({x0, y}, {x0, y + 0.03f * s}, lw, col);
  c.line({x1, y}, {x1, y + 0.03f * s}, lw, col);
  // Its top just under the bracket at whatever size the rule gives.
  const float size = c.text_size(0.05f * s * kSmallText);
  c.text(title, {(x0 + x1) * 0.5f, y - std::max(0.07f * s, 0.01f * s + c.font().ascent() * size)}, size,
         with_alpha(palette::text, alpha), Align::Center);
}

void legend(Canvas& c, glm::vec2 at, float s, float alpha) {
  const std::pair<const char*, glm::vec4> items[] = {
      {"forward", palette::forward}, {"backward", palette::backward}, {"waiting", palette::waiting}};
  float x = at.x;
  for (const auto& [name, col] : items) {
    Rect sw{{x, at.y}, {x + 0.05f * s, at.y + 0.035f * s}};
    if (col == palette::waiting)
      c.hatched(sw, with_alpha(palette::waiting_bg, alpha), with_alpha(col, alpha), 0.02f * s, 0.006f * s);
    else
      c.box(sw, with_alpha(col, alpha));
    x += 0.07f * s;
    x += c.text(name, {x, at.y + 0.004f * s}, 0.036f * s * kSmallText, with_alpha(palette::text_dim, alpha)) + 0.08f * s;
  }
}

}  // namespace

// ---- Stages ----

Camera StagesChapter::camera(glm::vec2 viewport, float t) const {
  return dive(two_gpu_camera(sc_.layout(), viewport, 0.3f, 0.75f), Camera::fit(sc_.frame(0.45f, 0.5f), viewport, 0.02f),
              phase(t, 0.0f, kPan, Ease::InOutCubic));
}

void StagesChapter::prepare(float) {
  story_expert_split_bytes();
  story_pipeline_held_bytes();
}

Rect StagesChapter::fits_badge(int rank) const {
  BoxParts b = sc_.box(rank);
  return Rect::centered({b.right_wall.center().x, b.right_wall.max.y - 0.1f * b.s}, glm::vec2(0.11f * b.s));
}

void StagesChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  const SplitBytes* split = story_expert_split_bytes_ready();  // a job, done by chapter 20 (0 until then)
  warm_story_pipeline_steps();  // the next two chapters' real steps, measured while this one plays
  const float s = sc_.s();
  Canvas& c = f.world;
  const float sockets = phase(t, kSockets, 0.5f, Ease::Smooth);
  const float arrive = phase(t, kArrive, 0.7f, Ease::Smooth);
  const float walls = phase(t, kWalls, 0.8f, Ease::InOutCubic);
  draw_field_behind(c, sc_.layout(), 0.05f, wpp, 2, sockets > 0.0f ? std::vector<int>{8, 9} : std::vector<int>{});
  const double cap = double(toy_capacity_bytes());
  const float before = split ? float(split->split / cap) : 0.0f;  // where chapter 20 left them
  for (int r = 0; r < 4; ++r) {
    c.set_layer(1);
    if (r < 2) {
      draw_stage_box(c, sc_, r, lerp(before, held_fill(r), walls), 1.0f, wpp);
    } else {
      // The socket, dashed, then the GPU arriving around it.
      if (arrive < 1.0f)
        dashed_rect(c, sc_.chip(r), 0.03f * s, std::max(1.5f * wpp, 0.005f * s),
                    with_alpha(palette::chip_edge, 1.6f * sockets * (1.0f - arrive)));
      if (arrive > 0.0f) draw_stage_box(c, sc_, r, held_fill(r) * walls, arrive, wpp);
    }
    if (r >= 2) continue;
    // Layers 5-8 lift from where they waited into the slots of the GPU above, dashed until it
    // arrives around them.
    c.set_layer(2);
    const Rect above = sc_.chip(r + 2);
    for (int k = 0; k < 4; ++k) {
      float lift = phase(t, kLift + 0.12f * (3 - k), 0.9f, Ease::InOutCubic);  // the top one first
      Rect from = waiting_layer_rect(sc_.chip(r), k), to = box_parts(above).slab(k, 4);
      Rect now{lerp(from.min, to.min, lift), lerp(from.max, to.max, lift)};
      float a = 1.0f - arrive;
      if (a <= 0.0f) continue;
      c.box(now, with_alpha(palette::weights, 0.10f * a), 0.012f * s);
      dashed_rect(c, now, 0.02f * s, std::max(1.5f * wpp, 0.004f * s), with_alpha(palette::weights, 0.9f * a));
      draw_layer_label(c, now, 5 + k, s, with_alpha(palette::text_dim, a), 0.4f);
    }
  }
  c.set_layer(2);
  draw_gpu_names(c, sc_, arrive);
  // The counter.
  c.text(t >= kArrive + 0.3f ? "4 GPUs" : "2 GPUs", {sc_.chip(3).max.x, sc_.chip(3).max.y + 0.07f * s}, 0.06f * s,
         palette::text, Align::Right);
  // Every GPU fits: a check on each, from its own rank's bytes.
  for (int r = 0; r < 4; ++r) {
    float a = phase(t, kFits + 0.1f * r, 0.35f, Ease::OutBack);
    if (a <= 0.0f || !story_pipeline_held_bytes_ready() || held_fill(r) >= 1.0f) continue;
    Rect badge = fits_badge(r);
    c.disc(badge.center(), 0.07f * s * std::min(a, 1.2f), palette::lit);
    check_mark(c, Rect::centered(badge.center(), badge.size() * 0.8f), std::max(2.0f * wpp, 0.012f * s),
               with_alpha(palette::background, std::min(a, 1.0f)));
    const float fits = c.text_size(0.04f * s);  // under the badge, its top clear of it
    c.text("fits", {badge.center().x, badge.min.y - std::max(0.06f * s, 0.01f * s + c.font().ascent() * fits)}, fits,
           with_alpha(palette::lit, std::min(a, 1.0f)), Align::Center);
  }
  const float labels = phase(t, kLabels, 0.5f, Ease::Smooth);
  draw_stage_labels(c, sc_, labels);
  Rect a = sc_.chip(0), b = sc_.chip(1);
  bracket(c, a.min.x, b.max.x, a.min.y - 0.16f * s, "Pipeline parallelism · the layers split by height", s, wpp,
          labels);
  char line[200];
  if (const auto* held = story_pipeline_held_bytes_ready())
    std::snprintf(line, sizeof line,
                  "held per GPU (weights, gradients, optimizer; each rank's allocator): stage 1 %s · stage 2 %s · "
                  "capacity %s",
                  format_bytes((*held)[0]).c_str(), format_bytes((*held)[2]).c_str(),
                  format_bytes(toy_capacity_bytes()).c_str());
  else
    std::snprintf(line, sizeof line, "held per GPU: reading each rank's allocator…");
  // Two centred lines; the first, if the rule makes it wider than the picture, wraps, and the
  // second goes under however many lines it took.
  const float size = c.text_size(0.036f * s * kSmallText), mid = (a.min.x + b.max.x) * 0.5f;
  const float title = c.text_size(0.05f * s * kSmallText);
  const float title_base = a.min.y - 0.16f * s - std::max(0.07f * s, 0.01f * s + c.font().ascent() * title);
  const float held_y = std::min(a.min.y - 0.33f * s, title_base - 1.25f * size);
  c.text(line, {mid, held_y}, size, with_alpha(palette::text_dim, phase(t, kWalls + 0.4f, 0.6f)),
         Align::Center);
  const float room = c.view().visible.size().x - 8.0f * cam.world_per_pixel();
  const int first_lines = c.text_width(line, size) > room && room > 0.0f ? 2 : 1;
  c.text("no layer is trained yet: all eight begin at step 0 and learn together",
         {mid, held_y - std::max(0.08f * s, 1.25f * size) * first_lines}, size,
         with_alpha(palette::text_dim, labels), Align::Center);
  c.set_layer(0);
}

// ---- One step on the pipeline ----

Camera PipelineStepChapter::camera(glm::vec2 viewport, float) const {
  return Camera::fit(sc_.frame(2.95f, below_), viewport, 0.02f);
}

void PipelineStepChapter::prepare(float) {
  story_pipeline_held_bytes();
  step();
}

std::vector<int> PipelineStepChapter::sends_in_order() const {
  std::vector<int> order;
  if (!holds_) return order;
  const auto& h = step().handoffs;
  for (int i = 0; i < static_cast<int>(h.size()); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return h[a].sent < h[b].sent; });
  return order;
}

int PipelineStepChapter::handoff_at(float t, float* progress) const {
  const PipelineStep& st = step();
  const double base = t - kRun;
  const auto order = sends_in_order();
  for (int i = 0; i < static_cast<int>(order.size()); ++i) {
    double ti = st.handoffs[order[i]].sent / st.step_end * kRunFor + kHold * i;
    if (base < ti) break;
    if (base < ti + kHold) {
      if (progress) *progress = static_cast<float>((base - ti) / kHold);
      return order[i];
    }
  }
  return -1;
}

double PipelineStepChapter::virtual_time(float t) const {
  if (t < kRun) return -1.0;
  const PipelineStep& st = step();
  const double base = t - kRun;
  const auto order = sends_in_order();
  int passed = 0;
  for (int i = 0; i < static_cast<int>(order.size()); ++i) {
    double ti = st.handoffs[order[i]].sent / st.step_end * kRunFor + kHold * i;
    if (base < ti) break;
    if (base < ti + kHold) return st.handoffs[order[i]].sent;  // held while it travels
    passed = i + 1;
  }
  return std::clamp((base - kHold * passed) / kRunFor, 0.0, 1.0) * st.step_end;
}

float PipelineStepChapter::chapter_time(double v) const {
  const PipelineStep& st = step();
  int before = 0;
  for (int i : sends_in_order()) before += st.handoffs[i].sent < v;
  return kRun + static_cast<float>(v / st.step_end) * kRunFor + kHold * before;
}

double PipelineStepChapter::draw_run(const SceneFrame& f, const Camera& cam) {
  const float wpp = cam.world_per_pixel(), s = sc_.s();
  Canvas& c = f.world;
  draw_field_behind(c, sc_.layout(), 0.05f, wpp, 2, {8, 9});
  // Veil the field around the four GPUs: the gauges and the numbers need a quiet ground.
  c.veil(sc_.frame(3.2f, below_ + 0.3f), palette::background, 0.9f);
  story_pipeline_held_bytes_ready();  // queued before the step (a quick job): the walls come first
  if (!ready_step()) {
    // In the window, the step may still be measured on the job runner: the boxes, and a note.
    for (int r = 0; r < 4; ++r) {
      c.set_layer(1);
      draw_stage_box(c, sc_, r, held_fill(r), 1.0f, wpp);
    }
    c.set_layer(2);
    draw_stage_labels(c, sc_, 1.0f);
    draw_gpu_names(c, sc_, 1.0f);
    std::string note = story_pipeline_activity();
    c.text(note.empty() ? "measuring the real step…" : note + "…", {sc_.gauge(2).min.x, sc_.gauge(2).max.y + 0.05f * s},
           0.042f * s * kSmallText, palette::forward);
    return -1.0;
  }
  const PipelineStep& st = step();  // measured: no wait
  const double v = virtual_time(f.t);
  StepLook look{&st, v, 1.0f};
  for (int r = 0; r < 4; ++r) {
    c.set_layer(1);
    draw_stage_box(c, sc_, r, held_fill(r), 1.0f, wpp);
    c.set_layer(2);
    draw_step_on_box(c, sc_, r, look, wpp);
  }
  float travel = 0.0f;
  int moving = handoff_at(f.t, &travel);
  if (moving >= 0) {
    c.set_layer(3);
    draw_handoff(c, sc_, st.handoffs[moving], travel, 1.0f);
    c.set_layer(2);
  }
  draw_stage_labels(c, sc_, 1.0f);
  draw_gpu_names(c, sc_, 1.0f);
  // The gradients of each stage's two GPUs meet (its all-reduce), drawn for a moment from when
  // it began on the virtual clock.
  for (int stage = 0; stage < 2; ++stage) {
    float at = chapter_time(st.meet_begin[stage]);
    draw_gradients_meet(c, sc_, stage, pulse(f.t, at, 0.6f));
  }
  for (int r = 0; r < 4; ++r) {
    Rect g = sc_.gauge(r);
    draw_gauge(c, g, st, r, v, st.pipeline_end, 24, 1.0f, s, wpp);
    c.text("GPU " + std::to_string(r + 1), {g.min.x - 0.03f * s, g.min.y + 0.005f * s}, 0.04f * s * kSmallText, palette::text_dim,
           Align::Right);
  }
  // Under each stage's gauges: its idle share, once the pipeline has drained.
  for (int stage = 0; stage < 2; ++stage) {
    Rect g = sc_.gauge(stage * 2 + 1);
    float shown = v >= st.pipeline_end ? 1.0f : 0.0f;
    const float size = c.text_size(0.042f * s * kSmallText);  // its top just under the gauge, at any size
    c.text("stage " + std::to_string(stage + 1) + " idle " + percent(st.stage_idle[stage]) + " (measured)",
           {g.max.x, g.min.y - 0.02f * s - c.font().ascent() * size}, size, with_alpha(palette::text, shown),
           Align::Right);
  }
  Rect top = sc_.gauge(2);
  // The clock's note runs from the gauges' left edge; where large text would push it over the
  // GPU names to stay on the picture, a shorter form is told (the caption and README say more).
  char clock_long[120], clock_short[80];
  std::snprintf(clock_long, sizeof clock_long, "time →  (virtual clock; each op costs its fastest of %d measured runs)",
                kMeasuredSteps);
  std::snprintf(clock_short, sizeof clock_short, "time →  (virtual clock, fastest of %d runs)", kMeasuredSteps);
  const float clock_size = 0.036f * s * kSmallText;
  c.text(c.first_fitting({clock_long, clock_short, "time →"}, top.min.x, clock_size), {top.min.x, top.max.y + 0.05f * s},
         clock_size, palette::text_faint);
  c.text(v >= st.step_end ? "step 1" : "step 0", {sc_.chip(3).max.x, sc_.chip(3).max.y + 0.07f * s}, 0.06f * s,
         palette::text, Align::Right);
  legend(c, {top.min.x, sc_.chip(3).max.y + 0.07f * s}, s, 1.0f);
  return v;
}

// ---- Hand it up, and wait ----

void WaitChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float s = sc_.s();
  Canvas& c = f.world;
  const double v = draw_run(f, cam);
  if (!ready_step()) {
    c.set_layer(0);
    return;
  }
  const PipelineStep& st = step();
  // The loss, measured where the forward pass ends: at the top of stage 2.
  double top_done = 0.0;
  for (const PipeSpan& sp : st.spans)
    if (sp.rank == 2 && !sp.backward) top_done = std::max(top_done, sp.end);
  c.set_layer(3);
  if (v >= top_done && top_done > 0.0) {
    char loss[64];
    std::snprintf(loss, sizeof loss, "error measured: loss %.2f", st.loss);
    Rect g3 = sc_.chip(2), g4 = sc_.chip(3);
    c.text(loss, {(g3.min.x + g4.max.x) * 0.5f, g3.max.y + 0.07f * s}, 0.05f * s * kSmallText, palette::backward, Align::Center);
  }
  // The hand-over named while it travels, in the gap between the rows.
  const int moving = handoff_at(f.t, nullptr);
  if (moving >= 0) {
    const PipeHandoff& h = st.handoffs[moving];
    Rect lo = sc_.chip(1), hi = sc_.chip(3);
    char what[80];
    std::snprintf(what, sizeof what, "GPU %d %s GPU %d", h.from + 1,
                  h.backward ? "hands the correction down to" : "hands its activations up to", h.to + 1);
    c.text(what, {lo.max.x + 0.06f * s, (lo.max.y + hi.min.y) * 0.5f - 0.015f * s}, 0.042f * s * kSmallText,
           h.backward ? palette::backward : palette::forward);
  }
  // What the hand-over really cost, and the summary.
  double send = 0.0;
  for (const PipeHandoff& h : st.handoffs) send = std::max(send, h.arrived - h.sent);
  // Two paragraphs under the boxes and gauges, wrapped to the width they span.
  const float x0 = sc_.gauge(0).min.x - 0.4f * s, width = sc_.gauge(0).max.x - x0;
  float done = phase(f.t, kRun + kRunFor + kSends * kHold, 0.6f, Ease::Smooth);
  char line[220];
  std::snprintf(line, sizeof line,
                "one microbatch, two stages: while one stage works the other waits · idle %s of the step, both stages "
                "averaged (measured)",
                percent(st.bubble).c_str());
  float y = c.paragraph(line, {x0, sc_.chip(0).min.y - 0.16f * s}, width, 0.042f * s * kSmallText,
                        with_alpha(palette::text, done));
  std::snprintf(line, sizeof line,
                "the clock pauses at each hand-over so you can follow it: the longest took %.1f µs on the "
                "virtual NVLink",
                send * 1e6);
  c.paragraph(line, {x0, y - 0.03f * s}, width, 0.036f * s * kSmallText, palette::text_faint);
  c.set_layer(0);
}

// ---- Back to back ----

void BackToBackChapter::prepare(float) {
  PipelineStepChapter::prepare(0.0f);
  for (int m : kRuns) story_pipeline_step(m);
}

double BackToBackChapter::compare_full() const {
  double full = 0.0;
  for (int m : kRuns) full = std::max(full, story_pipeline_step(m).pipeline_end);
  return full;
}

Rect BackToBackChapter::compare_gauge(int i, int stage) const {
  Rect a = sc_.chip(0);
  const float s = sc_.s();
  float y = a.min.y - 0.62f * s - i * 0.42f * s + (stage == 1 ? 0.115f * s : 0.0f);
  return {{a.min.x + 0.12f, y}, {a.min.x + 0.12f + 2.7f, y + 0.1f * s}};  // tall enough for the numbers
}

void BackToBackChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float s = sc_.s(), wpp = cam.world_per_pixel();
  Canvas& c = f.world;
  const double v = draw_run(f, cam);
  if (!ready_step()) {
    c.set_layer(0);
    return;
  }
  const PipelineStep& st = step();
  c.set_layer(3);
  // When both stages are busy with different microbatches, say so (from the timeline).
  auto working_on = [&](int rank) -> const PipeSpan* {
    for (const PipeSpan& sp : st.spans)
      if (sp.rank == rank && sp.begin <= v && v < sp.end) return &sp;
    return nullptr;
  };
  const PipeSpan *lo = working_on(0), *hi = working_on(2);
  if (lo && hi && lo->microbatch != hi->microbatch) {
    char both[120];
    std::snprintf(both, sizeof both, "both stages busy: stage 2 %s microbatch %d, stage 1 %s microbatch %d",
                  hi->backward ? "corrects" : "runs", hi->microbatch + 1, lo->backward ? "corrects" : "runs",
                  lo->microbatch + 1);
    c.text(both, {sc_.gauge(0).min.x, sc_.chip(0).max.y + 0.07f * s}, 0.04f * s * kSmallText, palette::text);
  }
  // Then the same batch cut into 1, 2 and 4 microbatches: one time scale for all three, once all
  // three are measured.
  bool all = true;
  for (int m : kRuns) all &= story_pipeline_step_ready(m) != nullptr;
  c.set_layer(2);
  if (!all) {
    const float head = phase(f.t, kCompare - 0.3f, 0.5f, Ease::Smooth);
    Rect g0 = compare_gauge(0, 1);
    std::string note = story_pipeline_activity();
    c.text(note.empty() ? "measuring 1, 2 and 4 microbatches…" : note + "…", {g0.min.x, g0.max.y + 0.1f * s},
           0.04f * s * kSmallText, with_alpha(palette::forward, head));
    c.set_layer(0);
    return;
  }
  const double full = compare_full();
  float head = phase(f.t, kCompare - 0.3f, 0.5f, Ease::Smooth);
  Rect g0 = compare_gauge(0, 1);
  c.text("the same 8 texts per step, cut into more microbatches (one time scale; GPU 1 and GPU 3)",
         {g0.min.x, g0.max.y + 0.1f * s}, 0.04f * s * kSmallText, with_alpha(palette::text, head));
  float lowest = compare_gauge(2, 0).min.y;  // the bottom of the rows and their wrapped notes
  for (int i = 0; i < 3; ++i) {
    float a = phase(f.t, kCompare + i * kCompareEvery, 0.4f, Ease::Smooth);
    if (a <= 0.0f) continue;
    const PipelineStep& run = story_pipeline_step(kRuns[i]);
    float grow = phase(f.t, kCompare + i * kCompareEvery, 0.5f);
    for (int stage = 0; stage < 2; ++stage) {
      Rect g = compare_gauge(i, stage);
      draw_gauge(c, g, run, stage * 2, grow * run.pipeline_end, full, 24, a, s, wpp);
    }
    Rect g = compare_gauge(i, 0);
    c.text(std::to_string(kRuns[i]) + (kRuns[i] == 1 ? " microbatch" : " microbatches"),
           {g.min.x - 0.03f * s, g.max.y + 0.02f * s}, 0.04f * s * kSmallText, with_alpha(palette::text_dim, a), Align::Right);
    char line[160];
    std::snprintf(line, sizeof line, "idle %s measured · %s textbook (p−1)/(m+p−1), p=2 m=%d",
                  percent(run.bubble).c_str(), percent(run.textbook).c_str(), kRuns[i]);
    // Beside the pair of gauges, wrapped to the room left of the picture's right edge.
    const float x = g.max.x + 0.05f * s, size = c.text_size(0.042f * s * kSmallText);
    const float room = std::max(c.text_right() - x, 0.6f);
    lowest = std::min(lowest, c.paragraph(line, {x, g.max.y + 0.02f * s + c.font().ascent() * size}, room, size,
                                          with_alpha(palette::text, a)));
  }
  float why = phase(f.t, kCompare + 3 * kCompareEvery, 0.5f, Ease::Smooth);
  Rect last = compare_gauge(2, 0);
  const float note = c.text_size(0.038f * s * kSmallText);
  c.paragraph("the textbook figure assumes equal stages; here stage 2 also runs the output layer and the loss, so it "
              "works longer",
              {last.min.x, std::min(last.min.y - 0.12f * s + c.font().ascent() * note, lowest - 0.02f * s)},
              std::max(c.text_right() - last.min.x, 0.6f), note, with_alpha(palette::text_dim, why));
  c.set_layer(0);
}

}  // namespace onegpu::app
