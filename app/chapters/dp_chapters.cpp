#include "app/chapters/dp_chapters.h"

#include <algorithm>
#include <cstdio>

#include "app/chapters/box_chapters.h"
#include "app/chapters/field_chapter.h"
#include "app/run/dp_copy.h"
#include "app/run/dp_drift.h"
#include "app/run/story_run.h"
#include "app/run/dp_step.h"
#include "app/run/first_step.h"
#include "app/run/model_memory.h"
#include "app/scene/gpu_box.h"
#include "app/scene/learning_scene.h"
#include "render/palette.h"
#include "render/text_rule.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;

float CopyChapter::duration() const {
  // From the plan (nothing runs): the length must not wait for the copy's job.
  return kFirstCopy + kCopyEvery * static_cast<float>(story_model_copy_broadcasts()) + 1.4f;
}

// The three data-parallel runs are jobs (app/run/posted.h); the copy's first, then the next
// chapters' runs behind it, so they are ready by the time those chapters open.
void CopyChapter::prepare(float) { story_model_copy(); }
std::string CopyChapter::activity() const { return story_model_copy_activity(); }
void DifferentTextChapter::prepare(float) { story_drift(); }
std::string DifferentTextChapter::activity() const { return story_drift_activity(); }
void SyncChapter::prepare(float) { story_dp_step(); }
std::string SyncChapter::activity() const { return story_dp_step_activity(); }

Camera CopyChapter::camera(glm::vec2 viewport, float t) const {
  Camera both = two_gpu_camera(layout_, viewport, 0.35f, 0.22f);
  // Pull back from GPU 1 alone to make room beside it.
  return dive(box_camera(layout_, viewport), both, phase(t, 0.0f, 1.0f, Ease::InOutCubic));
}

void CopyChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  draw_field_behind(f.world, layout_, 0.05f, wpp, 2);
  Canvas& c = f.world;
  const CopyFacts* copy_ready = story_model_copy_ready();
  story_drift_ready();  // queued behind the copy, for the chapters after
  story_dp_step_ready();
  BoxParts g1 = box_parts(layout_.chip_rect(0)), g2 = box_parts(layout_.chip_rect(1));
  if (!copy_ready) {  // the copy is being made: GPU 1 alone, and a line saying so
    c.set_layer(1);
    draw_box(c, g1, loaded_box(4), wpp);
    draw_measuring(c, g1.chip, story_model_copy_activity());
    return;
  }
  const CopyFacts& copy = *copy_ready;
  const float s = g1.s;
  // How many layers have arrived on GPU 2, and where the one in flight is.
  const int n = static_cast<int>(copy.layers.size());
  float since = (t - kFirstCopy) / kCopyEvery;
  int landed = std::clamp(static_cast<int>(std::floor(since)), 0, n);
  float flight = since - landed;  // 0..1 for the copy in flight

  c.set_layer(1);
  draw_box(c, g1, loaded_box(4), wpp);
  // GPU 2: first an empty socket traced beside GPU 1, then the GPU arriving in it, empty.
  float trace = phase(t, kArrive, 0.6f, Ease::InOutCubic);
  if (trace > 0.0f) {
    c.set_layer(0);
    const Rect& r = g2.chip;
    float per = 2.0f * (r.size().x + r.size().y), len = per * trace, lw = std::max(1.5f * wpp, 0.005f * s);
    glm::vec4 col = with_alpha(palette::text_faint, 1.0f);
    // Around the socket from its lower-left corner: bottom, right, top, left.
    glm::vec2 pts[5] = {r.min, {r.max.x, r.min.y}, r.max, {r.min.x, r.max.y}, r.min};
    for (int i = 0; i < 4 && len > 0.0f; ++i) {
      float side = glm::length(pts[i + 1] - pts[i]);
      float k = std::min(1.0f, len / side);
      c.line(pts[i], pts[i] + (pts[i + 1] - pts[i]) * k, lw, col);
      len -= side;
    }
    c.set_layer(1);
  }
  float arrive = phase(t, kArrive + 0.7f, 0.7f, Ease::OutCubic);
  BoxLook look2 = loaded_box(0);
  look2.capacity_label.clear();
  look2.fade = arrive;
  // Its walls rise with the bytes of the layers copied so far (the same measured bytes).
  const auto& bytes = story_model_bytes(4);
  double cap = static_cast<double>(toy_capacity_bytes());
  int copied_layers = 0;
  for (int i = 0; i < landed; ++i) copied_layers = std::max(copied_layers, copy.layers[i] + 1);
  look2.layers = copied_layers;
  look2.fill_weights = copied_layers > 0 ? static_cast<float>(bytes[copied_layers - 1].total() / cap) : 0.0f;
  draw_box(c, g2, look2, wpp);
  c.set_layer(2);
  // The copy in flight: the scan lights GPU 1's layer, its copy lifts and slides across,
  // tied back by a thread.
  if (landed < n && since >= 0.0f) {
    int l = std::clamp(copy.layers[landed], 0, 3);
    Rect from = g1.slab(l, 4), to = g2.slab(l, 4);
    c.box(from, with_alpha(palette::lit, 0.25f), 0.012f * s, with_alpha(palette::lit, 0.9f), std::max(wpp, 0.004f * s));
    float k = ease(Ease::InOutCubic, flight);
    glm::vec2 lift{0.0f, 0.08f * s * std::sin(k * 3.14159265f)};
    glm::vec2 off = (to.min - from.min) * k + lift;
    Rect moving{from.min + off, from.max + off};
    c.line({from.max.x, from.center().y}, {moving.min.x, moving.center().y}, std::max(wpp, 0.003f * s),
           with_alpha(palette::lit, 0.7f));
    c.box(moving, with_alpha(palette::weights, 0.85f), 0.012f * s, palette::weights, std::max(wpp, 0.004f * s));
  }
  // The counter, and "=" once the copy is checked.
  c.text(arrive > 0.5f ? "2 GPUs" : "1 GPU", {g2.chip.max.x, g1.chip.max.y + 0.08f * s}, 0.05f * s, palette::text,
         Align::Right);
  float eq = landed >= n ? phase(t, kFirstCopy + kCopyEvery * n + 0.2f, 0.4f, Ease::Smooth) : 0.0f;
  glm::vec2 mid{(g1.chip.max.x + g2.chip.min.x) * 0.5f, g1.chip.center().y};
  c.text(copy.equal_after ? "=" : "≠", mid, 0.14f * s,
         with_alpha(copy.equal_after ? palette::text : palette::backward, eq), Align::Center);
  char line[160];
  std::snprintf(line, sizeof line, "%d broadcasts, %s copied · GPU 2's weights now equal GPU 1's, bit for bit", n,
                format_bytes(copy.bytes).c_str());
  c.text(copy.equal_after ? line : "the copy does not match", {mid.x, g1.chip.min.y - 0.12f * s}, 0.036f * s,
         with_alpha(palette::text_dim, eq), Align::Center);
  c.set_layer(0);
}

Camera DifferentTextChapter::camera(glm::vec2 viewport, float) const {
  return two_gpu_camera(layout_, viewport, 0.45f, 0.22f);
}

Rect DifferentTextChapter::tray(int gpu, int i) const {
  Rect c = layout_.chip_rect(gpu);
  float s = c.size().x;
  float top = c.min.y - 0.06f * s - i * 0.1f * s;
  return {{c.min.x, top - 0.08f * s}, {c.max.x, top}};
}

Rect DifferentTextChapter::tick(int gpu, int layer) const {
  BoxParts b = box_parts(layout_.chip_rect(gpu));
  Rect slab = b.slab(layer, 4);
  float x = slab.max.x - 0.025f * b.s;
  return {{x - 0.004f * b.s, slab.min.y}, {x + 0.004f * b.s, slab.max.y}};
}

void DifferentTextChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  draw_field_behind(f.world, layout_, 0.05f, wpp, 2);
  Canvas& c = f.world;
  const DriftFacts* drift_ready = story_drift_ready();
  story_dp_step_ready();  // the next chapter's run, queued behind this one
  StoryRun& run = StoryRun::get();
  BoxParts g[2] = {box_parts(layout_.chip_rect(0)), box_parts(layout_.chip_rect(1))};
  if (!drift_ready) {  // the two lone copies are still training: both GPUs, and a line saying so
    c.set_layer(1);
    for (const BoxParts& b : g) draw_box(c, b, loaded_box(4), wpp);
    draw_measuring(c, g[0].chip, story_drift_activity());
    return;
  }
  const DriftFacts& drift = *drift_ready;
  const float s = g[0].s;
  // The "what if": the copies update alone and stop being the same model. It stays to the end,
  // the picture a class comes back to: the point of this chapter is the "≠"; the next one
  // brings the "=" back by averaging.
  float what_if = phase(t, 2.4f, 0.5f, Ease::Smooth);
  for (int k = 0; k < 2; ++k) {
    c.set_layer(1);
    BoxLook look = loaded_box(4);
    if (k == 1) {
      look.capacity_label.clear();
      look.tone.assign(4, 0.0f);
    }
    draw_box(c, g[k], look, wpp);
    if (k == 1 && what_if > 0.0f) {
      // GPU 2's layers take another shade: a different model now.
      for (int l = 0; l < 4; ++l)
        c.box(g[1].slab(l, 4), with_alpha(palette::optimizer, 0.45f * what_if), 0.012f * s);
    }
    c.set_layer(2);
    // Two texts each.
    float in = phase(t, 0.2f, 0.6f, Ease::OutCubic);
    for (int i = 0; i < 2; ++i) {
      TrayLook tl;
      tl.text = run.trays()[2 * k + i].text;
      tl.alpha = in;
      draw_tray(c, tray(k, i), tl, s, wpp);
    }
    // Each copy's own gradients: ticks sized by its real norms (one scale for both).
    double mx = 0;
    for (int kk = 0; kk < 2; ++kk)
      for (double v : drift.grad_norm[kk]) mx = std::max(mx, v);
    float ticks = phase(t, 1.0f, 0.8f, Ease::OutCubic);
    for (int l = 0; l < 4 && l < static_cast<int>(drift.grad_norm[k].size()); ++l) {
      Rect r = tick(k, l);
      float h = (0.015f + 0.06f * float(drift.grad_norm[k][l] / mx)) * s * ticks;
      c.line({r.center().x, r.center().y - h * 0.5f}, {r.center().x, r.center().y + h * 0.5f},
             std::max(2.0f * wpp, 0.008f * s), palette::backward);
    }
  }
  c.set_layer(2);
  glm::vec2 mid{(g[0].chip.max.x + g[1].chip.min.x) * 0.5f, g[0].chip.center().y};
  c.text(what_if > 0.5f ? "≠" : "=", mid, 0.14f * s, what_if > 0.5f ? palette::backward : palette::text, Align::Center);
  if (what_if > 0.0f) {
    Rect frame{{g[0].chip.min.x - 0.05f * s, g[0].chip.min.y - 0.05f * s},
               {g[1].chip.max.x + 0.05f * s, g[0].chip.max.y + 0.12f * s}};
    glm::vec4 col = with_alpha(palette::text_dim, what_if);
    float dash = 0.03f * s, lw = std::max(1.5f * wpp, 0.004f * s);
    for (float x = frame.min.x; x < frame.max.x; x += 2 * dash) {
      c.line({x, frame.min.y}, {std::min(frame.max.x, x + dash), frame.min.y}, lw, col);
      c.line({x, frame.max.y}, {std::min(frame.max.x, x + dash), frame.max.y}, lw, col);
    }
    for (float y = frame.min.y; y < frame.max.y; y += 2 * dash) {
      c.line({frame.min.x, y}, {frame.min.x, std::min(frame.max.y, y + dash)}, lw, col);
      c.line({frame.max.x, y}, {frame.max.x, std::min(frame.max.y, y + dash)}, lw, col);
    }
    char line[160];
    std::snprintf(line, sizeof line, "what if each updated alone? after %zu steps their weights differ by %.2f%% (measured)",
                  drift.rel_diff.size(), drift.rel_diff.empty() ? 0.0 : 100.0 * drift.rel_diff.back());
    c.text("two different models", {mid.x, frame.max.y - 0.06f * s}, 0.05f * s, with_alpha(palette::backward, what_if),
           Align::Center);
    c.text(line, {mid.x, frame.max.y + 0.03f * s}, 0.034f * s, with_alpha(palette::text, what_if), Align::Center);
  }
  c.set_layer(0);
}

Camera SyncChapter::camera(glm::vec2 viewport, float) const {
  return two_gpu_camera(layout_, viewport, 0.62f, 0.22f);
}

Rect SyncChapter::time_bar(int which) const {
  Rect a = layout_.chip_rect(0), b = layout_.chip_rect(1);
  float s = a.size().x;
  float y = a.min.y - (0.3f + 0.14f * which) * s;
  return {{a.min.x, y}, {b.max.x, y + 0.045f * s}};
}

void SyncChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  draw_field_behind(f.world, layout_, 0.05f, wpp, 2);
  Canvas& c = f.world;
  const DpStepFacts* dp_ready = story_dp_step_ready();
  BoxParts g1 = box_parts(layout_.chip_rect(0)), g2 = box_parts(layout_.chip_rect(1));
  if (!dp_ready) {  // the step is being measured: both GPUs, and a line saying so
    c.set_layer(1);
    for (const BoxParts* b : {&g1, &g2}) draw_box(c, *b, loaded_box(4), wpp);
    draw_measuring(c, g1.chip, story_dp_step_activity());
    return;
  }
  const DpStepFacts& dp = *dp_ready;
  const float s = g1.s;
  const float gap_x = (g1.chip.max.x + g2.chip.min.x) * 0.5f;
  for (const BoxParts* b : {&g1, &g2}) {
    c.set_layer(1);
    BoxLook look = loaded_box(4);
    if (b == &g2) look.capacity_label.clear();
    look.tone.assign(4, pulse(t, 2.3f, 0.8f));  // both re-tone with the same update
    draw_box(c, *b, look, wpp);
  }
  c.set_layer(2);
  // Gradient beads: from each layer of both GPUs into the gap, merged, and back to both.
  for (int l = 0; l < 4; ++l) {
    float start = 0.3f + 0.15f * l;
    float go = phase(t, start, 0.7f, Ease::InOutCubic), back = phase(t, start + 0.9f, 0.7f, Ease::InOutCubic);
    float y1 = g1.slab(l, 4).center().y;
    glm::vec2 left{g1.slab(l, 4).max.x, y1}, right{g2.slab(l, 4).min.x, y1}, mid{gap_x, y1};
    float r = 0.018f * s;
    if (go > 0.0f && go < 1.0f) {
      c.disc(lerp(left, mid, go), r, palette::backward);
      c.disc(lerp(right, mid, go), r, palette::backward);
    } else if (go >= 1.0f && back <= 0.0f) {
      c.disc(mid, r * 1.4f, palette::backward);  // merged: the average
    } else if (back > 0.0f && back < 1.0f) {
      c.disc(lerp(mid, left, back), r, palette::backward);
      c.disc(lerp(mid, right, back), r, palette::backward);
    }
  }
  // Equal, checked bit for bit after the update.
  float eq = phase(t, 2.6f, 0.4f, Ease::Smooth);
  glm::vec2 mid{gap_x, g1.chip.center().y + 0.42f * s};
  c.text(dp.replicas_equal ? "=" : "≠", mid, 0.14f * s, with_alpha(dp.replicas_equal ? palette::text : palette::backward, eq),
         Align::Center);
  // Under it, in the gap between the two chips: on two lines where the text rule draws the
  // words wider than the gap (at text 1.6 they ran over both chips' edges).
  const std::string said = dp.replicas_equal ? "identical, checked" : "copies differ!";
  const float gap = g2.chip.min.x - g1.chip.max.x - 0.02f * s, said_size = c.text_size(0.03f * s);
  const std::size_t cut = said.find(' ');
  if (c.text_width(said, 0.03f * s) <= gap || cut == std::string::npos) {
    c.text(said, {mid.x, mid.y - 0.06f * s}, 0.03f * s, with_alpha(palette::text_dim, eq), Align::Center);
  } else {
    c.text(said.substr(0, cut), {mid.x, mid.y - 0.06f * s}, 0.03f * s, with_alpha(palette::text_dim, eq), Align::Center);
    c.text(said.substr(cut + 1), {mid.x, mid.y - 0.06f * s - render::line_pitch(said_size, said_size)}, 0.03f * s,
           with_alpha(palette::text_dim, eq), Align::Center);
  }
  // The step count and the bracket.
  float st = phase(t, 2.8f, 0.3f, Ease::Smooth);
  c.text(st > 0.5f ? "step 1" : "step 0", {g2.chip.max.x, g1.chip.max.y + 0.08f * s}, 0.05f * s, palette::text,
         Align::Right);
  float br = phase(t, 3.0f, 0.6f, Ease::Smooth);
  float yb = g1.chip.min.y - 0.05f * s;
  glm::vec4 col = with_alpha(palette::text_dim, br);
  float lw = std::max(1.5f * wpp, 0.004f * s);
  c.line({g1.chip.min.x, yb}, {g2.chip.max.x, yb}, lw, col);
  c.line({g1.chip.min.x, yb}, {g1.chip.min.x, yb + 0.03f * s}, lw, col);
  c.line({g2.chip.max.x, yb}, {g2.chip.max.x, yb + 0.03f * s}, lw, col);
  c.text("Data parallelism · two copies share the work", {gap_x, yb - 0.07f * s}, 0.05f * s,
         with_alpha(palette::text, br), Align::Center);
  // Time bars on one scale: one GPU's step, then the two-GPU step.
  float grow = phase(t, 3.3f, 1.2f, Ease::InOutCubic);
  // One scale for both bars: the longer of the two (on a busy machine the measured costs can
  // make two GPUs no faster, and the picture must show that rather than clip it).
  const double two = dp.two_compute_s + dp.two_wait_s + dp.two_allreduce_s + dp.two_update_s;
  const double full = std::max(dp.one_gpu_s, two);
  char cap[200];
  // Chapter 11 timed the same four texts one at a time (a microbatch each); here the engine runs
  // them as one batch, which is quicker: say so, with that chapter's figure.
  double one_at_a_time_ms = 0.0;
  if (const RunState* warm = warm_step_ready())
    if (const RunStep* step = warm->last_complete()) one_at_a_time_ms = step_times(*step).total() * 1e3;
  if (one_at_a_time_ms > 0.0)
    std::snprintf(cap, sizeof cap, "one GPU: %.1f ms, the 4 texts as one batch (chapter 11, one text at a time: %.1f ms)",
                  dp.one_gpu_s * 1e3, one_at_a_time_ms);
  else
    std::snprintf(cap, sizeof cap, "one GPU: %.1f ms, the 4 texts as one batch", dp.one_gpu_s * 1e3);
  draw_time_bar(c, time_bar(0), {{dp.one_gpu_s, mix(palette::forward, palette::backward, 0.3f), "4 texts"}}, full,
                grow, br, cap, s, wpp);
  std::snprintf(cap, sizeof cap, "two GPUs: %.1f ms · %.0f µs of it averaging gradients over PCIe (virtual clock)",
                dp.two_total_s * 1e3, dp.two_allreduce_s * 1e6);
  draw_time_bar(c, time_bar(1),
                {{dp.two_compute_s, mix(palette::forward, palette::backward, 0.3f), "2 texts"},
                 {dp.two_wait_s, palette::waiting, ""},
                 {dp.two_allreduce_s, palette::backward, ""},
                 {dp.two_update_s, palette::weights, ""}},
                full, grow, br, cap, s, wpp);
  c.set_layer(0);
}

}  // namespace onegpu::app
