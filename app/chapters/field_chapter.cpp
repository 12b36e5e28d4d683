#include "app/chapters/field_chapter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <string>

#include "app/scene/chip.h"
#include "render/palette.h"
#include "render/text_rule.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;
using T = FieldTimeline;

namespace {
float count_unit(float ui_scale) { return 15.0f * ui_scale; }  // the count's label size, pixels
// The count's number: its baseline's right end, screen canvas pixels.
glm::vec2 count_at(glm::vec2 viewport, float ui_scale) {
  const float s = count_unit(ui_scale);
  return {viewport.x - 2.0f * s, viewport.y - 3.2f * s};
}
}  // namespace

float gpu_count_band(float ui_scale) { return 6.0f * count_unit(ui_scale); }

Camera fit_below_count(const Rect& r, glm::vec2 viewport, float margin, float ui_scale) {
  // Fitted to the viewport less the band (at most 40% of it), then the view grown upwards at the
  // same scale.
  const float band = std::min(gpu_count_band(ui_scale), 0.4f * viewport.y);
  Camera cam = Camera::fit(r, {viewport.x, std::max(1.0f, viewport.y - band)}, margin);
  const float wpp = cam.world_per_pixel();
  cam.viewport = viewport;
  cam.height = wpp * viewport.y;
  cam.center.y += 0.5f * band * wpp;
  return cam;
}

Camera field_camera(const FieldLayout& layout, glm::vec2 viewport, float ui_scale) {
  return fit_below_count(layout.bounds(), viewport, 0.04f, ui_scale);
}

int draw_field(Canvas& c, const FieldLayout& layout, const FieldDraw& d, float wpp) {
  const float t = d.field_t;
  const glm::vec2 origin = layout.cell(0).center;
  float max_dist = 0.0f;
  for (const auto& cell : layout.cells()) max_dist = std::max(max_dist, glm::length(cell.center - origin));
  float fade_in = phase(t, 0.0f, T::kFadeIn, Ease::Smooth);
  int lit = 0;

  c.set_layer(0);
  for (const auto& cell : layout.cells()) {
    ChipLook look;
    float on_at = cell.gpu == 0 ? T::kFirstOn
                                : T::kRippleStart + glm::length(cell.center - origin) / max_dist * T::kRippleSpan;
    look.power = phase(t, on_at, T::kSwitchTime, Ease::OutCubic);
    look.flash = pulse(t, on_at, T::kSwitchTime * 1.5f) * 0.8f;
    look.fade = fade_in * (cell.gpu == 0 ? 1.0f : d.others_fade);
    if (cell.gpu < d.hidden) continue;
    if (std::find(d.also_hidden.begin(), d.also_hidden.end(), cell.gpu) != d.also_hidden.end()) continue;
    if (cell.gpu == 0) {
      look.detail = d.gpu1_detail;
      look.tiles = d.gpu1_tiles;
      look.memory = d.gpu1_memory;
      c.set_layer(1);  // GPU 1 above its neighbours' glows
    }
    draw_chip(c, layout.chip_rect(cell.gpu), look, wpp);
    if (cell.gpu == 0) c.set_layer(0);
    if (look.power >= 0.5f) ++lit;
  }

  // The ring that marks GPU 1: it draws itself around the chip, then holds.
  float ring_p = phase(t, T::kRingStart, 0.8f, Ease::InOutCubic);
  if (ring_p > 0.0f && d.ring > 0.0f) {
    c.set_layer(1);
    float r = FieldLayout::kChip * 0.5f * std::numbers::sqrt2_v<float> + 0.12f;
    float thick = std::max(3.0f * wpp, 0.035f);
    float a = d.ring;
    c.ring(origin, r + thick * 2.5f, thick * 5.0f, with_alpha(palette::focus, 0.08f * a * ring_p));
    c.ring(origin, r, thick, with_alpha(palette::focus, a), std::numbers::pi_v<float> * 0.5f,
           2.0f * std::numbers::pi_v<float> * ring_p);
    float label = phase(t, T::kRingStart + 0.5f, 0.5f, Ease::Smooth) * a;
    c.text("GPU 1", origin + glm::vec2(0.0f, -r - 0.42f), 0.36f, with_alpha(palette::focus, label), Align::Center);
  }
  c.set_layer(0);
  return lit;
}

void draw_field_behind(Canvas& c, const FieldLayout& layout, float fade, float wpp, int hidden,
                       std::vector<int> also_hidden) {
  FieldDraw d;
  d.also_hidden = std::move(also_hidden);
  d.others_fade = fade;
  d.ring = 0.0f;
  d.hidden = hidden;
  draw_field(c, layout, d, wpp);
}

Camera FieldChapter::camera(glm::vec2 viewport, float) const { return field_camera(layout_, viewport, ui_scale_); }

void FieldChapter::draw(const SceneFrame& f, const Camera& cam) {
  FieldDraw d;
  d.field_t = f.t;
  int lit = draw_field(f.world, layout_, d, cam.world_per_pixel());

  // Counter, top right: how many of the field's GPUs are on.
  draw_gpu_count(f, cam, layout_.bounds(), lit, lit == 1 ? "GPU switched on" : "GPUs switched on",
                 phase(f.t, T::kFirstOn, 0.4f, Ease::Smooth));
}

Rect gpu_count_box(glm::vec2 viewport, float ui_scale, float text_w) {
  const float s = count_unit(ui_scale), pad = 0.5f * s;
  const glm::vec2 at = count_at(viewport, ui_scale);
  return {{at.x - text_w - pad, at.y - 1.75f * s - pad}, {at.x + pad, at.y + 2.0f * s + pad}};
}

bool gpu_count_covers_field(const Camera& cam, const Rect& field, glm::vec2 viewport, const Rect& box) {
  // The field's corners, in the screen canvas's pixels (origin bottom left, y up).
  const glm::vec2 top_right = cam.world_to_pixel(field.max), bottom_left = cam.world_to_pixel(field.min);
  const Rect f{{bottom_left.x, viewport.y - bottom_left.y}, {top_right.x, viewport.y - top_right.y}};
  return box.min.x < f.max.x && box.max.x > f.min.x && box.min.y < f.max.y && box.max.y > f.min.y;
}

void draw_gpu_count(const SceneFrame& f, const Camera& cam, const Rect& field, int n, std::string_view label,
                    float alpha) {
  const float s = count_unit(f.ui_scale);
  const glm::vec2 at = count_at(f.viewport, f.ui_scale);
  const std::string num = std::to_string(n);
  const float w = std::max(f.screen.text_width(num, 2.6f * s), f.screen.text_width(label, s));
  const Rect box = gpu_count_box(f.viewport, f.ui_scale, w);
  if (gpu_count_covers_field(cam, field, f.viewport, box))  // a badge, drawn over the chips it covers
    f.screen.box(box, with_alpha(palette::background, alpha), 0.4f * s, with_alpha(palette::chip_edge, alpha),
                 std::max(1.0f, 0.08f * s));
  f.screen.text(num, at, 2.6f * s, with_alpha(palette::text, alpha), Align::Right);
  f.screen.text(label, at - glm::vec2(0.0f, 1.3f * s), s, with_alpha(palette::text_dim, alpha), Align::Right);
}

Camera GpuChapter::closeup(glm::vec2 viewport) const {
  Rect chip = layout_.chip_rect(0);
  float s = chip.size().x;
  // Room above and below the chip for the labels.
  Rect view = Rect::centered(chip.center() + glm::vec2(0.0f, 0.0f * s), {s * 1.5f, s * 1.66f});
  return Camera::fit(view, viewport, 0.02f);
}

Camera GpuChapter::camera(glm::vec2 viewport, float t) const {
  return dive(field_camera(layout_, viewport, ui_scale_), closeup(viewport), phase(t, 0.2f, 2.4f, Ease::InOutCubic));
}

void GpuChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t;
  float dive_p = phase(t, 0.2f, 2.4f, Ease::InOutCubic);
  FieldDraw d;
  d.others_fade = 1.0f - 0.75f * dive_p;
  d.ring = 1.0f - phase(t, 0.2f, 1.2f);
  d.gpu1_detail = phase(t, 1.3f, 1.0f, Ease::Smooth);
  d.gpu1_tiles = phase(t, 2.2f, 1.4f);
  d.gpu1_memory = phase(t, 3.0f, 1.5f);
  draw_field(f.world, layout_, d, cam.world_per_pixel());

  // Labels, once the chip fills the view.
  Canvas& c = f.world;
  c.set_layer(2);
  ChipParts p = chip_parts(layout_.chip_rect(0));
  float s = p.body.size().x;
  float lw = std::max(1.5f * cam.world_per_pixel(), 0.004f * s);
  float big = 0.052f * s, small = 0.034f * s;

  float compute_a = phase(t, 3.3f, 0.6f, Ease::Smooth);
  glm::vec2 cl{p.die.center().x, p.body.min.y - 0.085f * s};
  glm::vec2 die_anchor{cl.x, p.die.min.y - 0.012f * s};
  c.line({cl.x, cl.y + big * 0.9f}, die_anchor, lw, with_alpha(palette::lit, compute_a * 0.8f));
  c.disc(die_anchor, lw * 2.2f, with_alpha(palette::lit, compute_a));
  c.text("Compute cores", cl, big, with_alpha(palette::text, compute_a), Align::Center);
  c.text("thousands of small units multiplying and adding side by side",
         cl - glm::vec2(0.0f, std::max(small * 1.5f, render::line_pitch(c.text_size(big), c.text_size(small)))), small,
         with_alpha(palette::text_dim, compute_a), Align::Center);

  float mem_a = phase(t, 4.3f, 0.6f, Ease::Smooth);
  // Both memory stacks lead to one label over the chip's middle: a label over each stack ran
  // into the other one (and the title) wherever the text rule made the words wider than the gap.
  const float bar_y = p.body.max.y + 0.03f * s;
  for (int side = 0; side < 2; ++side) {
    const Rect& stack = p.stacks[side * 3 + 2];
    glm::vec2 anchor{stack.center().x, stack.max.y + 0.012f * s};
    c.line({anchor.x, bar_y}, anchor, lw, with_alpha(palette::memory, mem_a * 0.8f));
    c.disc(anchor, lw * 2.2f, with_alpha(palette::memory, mem_a));
  }
  const float left_x = p.stacks[2].center().x, right_x = p.stacks[5].center().x, mid_x = 0.5f * (left_x + right_x);
  c.line({left_x - 0.5f * lw, bar_y}, {right_x + 0.5f * lw, bar_y}, lw, with_alpha(palette::memory, mem_a * 0.8f));
  const float sub_y = bar_y + 0.035f * s + c.font().descent() * c.text_size(small);
  c.line({mid_x, bar_y}, {mid_x, sub_y - c.font().descent() * c.text_size(small) - 0.25f * lw}, lw,
         with_alpha(palette::memory, mem_a * 0.8f));
  c.text("holds what the cores use", {mid_x, sub_y}, small, with_alpha(palette::text_dim, mem_a), Align::Center);
  c.text("Memory", {mid_x, sub_y + render::line_pitch(c.text_size(big), c.text_size(small))}, big,
         with_alpha(palette::text, mem_a), Align::Center);
  c.text("GPU 1", {p.body.min.x + 0.05f * s, p.body.min.y + 0.035f * s}, small,
         with_alpha(palette::text_faint, d.gpu1_detail), Align::Left);
  c.set_layer(0);

  // Overlay: which GPU this is.
  float sc = 15.0f * f.ui_scale;
  float a = phase(t, 1.8f, 0.6f, Ease::Smooth);
  f.screen.text("GPU 1 of 512", {f.viewport.x - 2.0f * sc, f.viewport.y - 2.4f * sc}, 1.2f * sc,
                with_alpha(palette::text_dim, a), Align::Right);
}

void draw_measuring(render::Canvas& c, const render::Rect& chip, const std::string& what) {
  const float s = chip.size().x;
  c.set_layer(3);
  c.text(what.empty() ? std::string("measuring…") : what + "…", {chip.center().x, chip.min.y - 0.1f * s}, 0.035f * s,
         render::palette::forward, render::Align::Center);
}

}  // namespace onegpu::app
