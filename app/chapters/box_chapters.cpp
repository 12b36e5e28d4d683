#include "app/chapters/box_chapters.h"

#include <cstdio>

#include "app/chapters/field_chapter.h"
#include "app/run/model_memory.h"
#include "app/scene/chip.h"
#include "render/palette.h"
#include "render/text_rule.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;

std::string format_bytes(std::int64_t bytes) {
  char buf[32];
  double mib = bytes / (1024.0 * 1024.0);
  if (mib >= 10) std::snprintf(buf, sizeof buf, "%.0f MB", mib);
  else if (mib >= 1) std::snprintf(buf, sizeof buf, "%.1f MB", mib);
  else std::snprintf(buf, sizeof buf, "%.0f kB", bytes / 1024.0);
  return buf;
}

Camera box_camera(const FieldLayout& layout, glm::vec2 viewport) {
  // The same framing as the end of the dive, so the chapters join without a jump.
  Rect chip = layout.chip_rect(0);
  float s = chip.size().x;
  return Camera::fit(Rect::centered(chip.center(), {s * 1.5f, s * 1.66f}), viewport, 0.02f);
}

Camera two_gpu_camera(const FieldLayout& layout, glm::vec2 viewport, float below, float above) {
  Rect a = layout.chip_rect(0), b = layout.chip_rect(1);
  float s = a.size().x;
  return Camera::fit({{a.min.x - 0.3f * s, a.min.y - below * s}, {b.max.x + 0.3f * s, a.max.y + above * s}}, viewport,
                     0.02f);
}

static float fill_of(int layers) {
  const auto& b = story_model_bytes(4);
  const double cap = static_cast<double>(toy_capacity_bytes());
  if (layers <= 0) {
    // Embedding and head alone: one layer's bytes less than the 1-layer model.
    return static_cast<float>((2.0 * b[0].total() - b[1].total()) / cap);
  }
  return static_cast<float>(b[layers - 1].total() / cap);
}

BoxLook loaded_box(int layers) {
  BoxLook look;
  look.capacity_label = format_bytes(toy_capacity_bytes()) + " · toy GPU";
  look.layers = layers;
  look.fill_weights = fill_of(layers);
  return look;
}

// ---- Open it up ----

Camera OpenChapter::camera(glm::vec2 viewport, float) const { return box_camera(layout_, viewport); }

void OpenChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  draw_field_behind(f.world, layout_, 0.25f, wpp);

  Rect chip = layout_.chip_rect(0);
  BoxParts p = box_parts(chip);
  const float s = p.s;
  Canvas& c = f.world;

  // The chip as the last chapter left it fades while the box forms under its lid.
  float chip_fade = 1.0f - phase(t, 0.5f, 0.9f, Ease::Smooth);
  BoxLook look = loaded_box(0);
  look.fill_weights = 0.0f;
  look.lid = 1.0f - phase(t, 0.4f, 1.2f, Ease::InOutCubic);
  look.walls = phase(t, 0.9f, 1.3f);
  look.ticks = phase(t, 2.2f, 0.6f, Ease::Smooth);
  look.strip = 0.15f + 0.1f * phase(t, 1.2f, 0.8f);
  look.strip_swell = pulse(t, 3.0f, 1.2f);
  c.set_layer(1);
  draw_box(c, p, look, wpp);
  if (chip_fade > 0.0f) {
    ChipLook cl;
    cl.power = 1.0f;
    cl.detail = 1.0f;
    cl.fade = chip_fade;
    draw_chip(c, chip, cl, wpp);
  }

  // Names for the two parts.
  c.set_layer(2);
  float big = 0.052f * s, small = 0.034f * s;
  // Each name over its note, spaced by the sizes the text rule draws them at (in a small window
  // both are raised to the minimum and the fixed gap left them touching).
  const float pitch = std::max(0.05f * s, render::line_pitch(c.text_size(big), c.text_size(small)));
  float mem_a = phase(t, 2.4f, 0.6f, Ease::Smooth);
  for (const Rect* wall : {&p.left_wall, &p.right_wall}) {
    c.text("Memory", {wall->center().x, chip.max.y + 0.06f * s + pitch}, big, with_alpha(palette::text, mem_a),
           Align::Center);
    c.text("fills as data arrives", {wall->center().x, chip.max.y + 0.06f * s}, small,
           with_alpha(palette::text_dim, mem_a), Align::Center);
  }
  float comp_a = phase(t, 3.0f, 0.6f, Ease::Smooth);
  const float compute_y = chip.min.y - 0.085f * s;
  c.text("Compute", {p.strip.center().x, compute_y}, big, with_alpha(palette::text, comp_a), Align::Center);
  c.text("lights up wherever work is being done", {p.strip.center().x, compute_y - pitch}, small,
         with_alpha(palette::text_dim, comp_a), Align::Center);
  // The pointer starts over the word, not inside it, at any size.
  const float word_top = compute_y + c.font().ascent() * c.text_size(big) + 0.008f * s;
  c.line({p.strip.center().x, std::max(chip.min.y - 0.04f * s, word_top)}, {p.strip.center().x, p.strip.min.y - 0.01f * s},
         std::max(1.5f * wpp, 0.004f * s), with_alpha(palette::lit, comp_a * 0.8f));
  c.set_layer(0);
}

// ---- A model is numbers ----

Camera WeightsChapter::camera(glm::vec2 viewport, float) const { return box_camera(layout_, viewport); }

int WeightsChapter::landed(float t) {
  int n = static_cast<int>((t - kFirstDrop) / kDropEvery);
  return std::clamp(n, 0, 4);
}

void WeightsChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  draw_field_behind(f.world, layout_, 0.25f, wpp);

  Rect chip = layout_.chip_rect(0);
  BoxParts p = box_parts(chip);
  const float s = p.s;
  Canvas& c = f.world;

  int n = landed(t);
  float drop = n < 4 ? phase(t, kFirstDrop + n * kDropEvery, kDropEvery * 0.8f) : 0.0f;
  BoxLook look = loaded_box(n);
  // The walls rise as each slab lands, by what that layer really costs.
  float settle = ease(Ease::OutCubic, phase(drop, 0.7f, 0.3f));
  look.fill_weights = lerp(fill_of(n), fill_of(std::min(4, n + 1)), n < 4 ? settle : 0.0f);
  look.dropping = n < 4 ? drop : 0.0f;
  look.hairlines = phase(t, kFirstDrop + 4 * kDropEvery, 0.6f, Ease::Smooth);
  look.strip = 0.25f;
  c.set_layer(1);
  draw_box(c, p, look, wpp);

  // What the walls hold, measured.
  c.set_layer(2);
  float small = 0.034f * s, big = 0.045f * s;
  const auto& bytes = story_model_bytes(4);
  int shown = std::min(4, n + (drop > 0.7f ? 1 : 0));
  std::int64_t used = shown > 0 ? bytes[shown - 1].total() : 0;
  char line[160];
  std::snprintf(line, sizeof line, "%d of 4 layers loaded · %s in use", shown,
                format_bytes(used > 0 ? used : 0).c_str());
  c.text(line, {chip.center().x, chip.min.y - 0.085f * s}, big, with_alpha(palette::text, 1.0f), Align::Center);
  if (shown > 0) {
    const ModelBytes& b = bytes[shown - 1];
    std::snprintf(line, sizeof line, "%.2fM weights × 18 bytes: weight, gradient, exact copy, two averages",
                  b.params / 1e6);
    const float pitch = std::max(0.05f * s, render::line_pitch(c.text_size(big), c.text_size(small)));
    c.text(line, {chip.center().x, chip.min.y - 0.085f * s - pitch}, small, with_alpha(palette::text_dim, 1.0f),
           Align::Center);
  }
  float deep = look.hairlines;
  c.text("4 layers drawn · big models stack dozens", {chip.center().x, chip.max.y + 0.06f * s}, small,
         with_alpha(palette::text_dim, deep), Align::Center);
  c.set_layer(0);
}

}  // namespace onegpu::app
