#include "app/chapters/memory_chapters.h"

#include <cstdio>

#include "app/chapters/box_chapters.h"
#include "app/chapters/field_chapter.h"
#include "app/run/model_memory.h"
#include "app/scene/gpu_box.h"
#include "render/palette.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;

// A rectangle outlined in dashes.
void dashed_rect(Canvas& c, const Rect& r, float dash, float width, glm::vec4 col) {
  auto side = [&](glm::vec2 a, glm::vec2 b) {
    float len = glm::length(b - a);
    glm::vec2 d = (b - a) / len;
    for (float x = 0; x < len; x += 2 * dash) c.line(a + d * x, a + d * std::min(len, x + dash), width, col);
  };
  side(r.min, {r.max.x, r.min.y});
  side({r.max.x, r.min.y}, r.max);
  side(r.max, {r.min.x, r.max.y});
  side({r.min.x, r.max.y}, r.min);
}

namespace {

// The four layers the 8-layer model adds, stacked above a box.
Rect extra_slab(const BoxParts& b, int k) {
  Rect base = b.slab(3, 4);
  float pitch = b.slab(1, 4).min.y - b.slab(0, 4).min.y;
  float y0 = b.chip.max.y + 0.04f * b.s + k * pitch;
  return {{base.min.x, y0}, {base.max.x, y0 + base.size().y}};
}

}  // namespace

Rect waiting_layer_rect(const Rect& chip, int k) { return extra_slab(box_parts(chip), k); }

void draw_waiting_layers(Canvas& c, const Rect& chip, float drop, float wpp) {
  BoxParts b = box_parts(chip);
  const float s = b.s;
  for (int k = 0; k < 4; ++k) {
    Rect r = extra_slab(b, k);
    glm::vec2 off{0.0f, (1.0f - drop) * (0.6f + 0.1f * k) * s};
    Rect rr{r.min + off, r.max + off};
    c.box(rr, with_alpha(palette::weights, 0.10f * drop), 0.012f * s);
    dashed_rect(c, rr, 0.02f * s, std::max(1.5f * wpp, 0.004f * s), with_alpha(palette::weights, 0.9f * drop));
    draw_layer_label(c, rr, 5 + k, s, with_alpha(palette::text_dim, drop));
  }
}

float MemoryChapter::need_weights_grads() {
  const ModelBytes& b = story_model_bytes(8)[7];
  return static_cast<float>(double(b.weights + b.gradients) / double(toy_capacity_bytes()));
}

float MemoryChapter::need_optimizer() {
  const ModelBytes& b = story_model_bytes(8)[7];
  return static_cast<float>(double(b.optimizer) / double(toy_capacity_bytes()));
}

Camera MemoryChapter::camera(glm::vec2 viewport, float t) const {
  Rect a = layout_.chip_rect(0), b = layout_.chip_rect(1);
  float s = a.size().x;
  Rect both{{a.min.x - 0.45f * s, a.min.y - 0.3f * s}, {b.max.x + 0.45f * s, a.max.y + 1.05f * s}};
  if (overflow_) return Camera::fit(both, viewport, 0.02f);
  // Pull back from GPU 1 alone to both GPUs with room above them.
  return dive(box_camera(layout_, viewport), Camera::fit(both, viewport, 0.02f), phase(t, 0.0f, 1.2f, Ease::InOutCubic));
}

void MemoryChapter::draw(const SceneFrame& f, const Camera& cam) {
  const float t = f.t, wpp = cam.world_per_pixel();
  draw_field_behind(f.world, layout_, 0.05f, wpp, 2);
  Canvas& c = f.world;
  const float need_wg = need_weights_grads(), need_opt = need_optimizer();
  for (int g = 0; g < 2; ++g) {
    BoxParts b = box_parts(layout_.chip_rect(g));
    const float s = b.s;
    c.set_layer(1);
    BoxLook look = loaded_box(4);
    float split = overflow_ ? phase(t, 2.6f, 0.8f, Ease::Smooth) : 0.0f;
    if (overflow_) look.fill_weights = 0.0f;  // the 8-layer need is drawn below instead
    if (g == 1 || overflow_) look.capacity_label.clear();
    draw_box(c, b, look, wpp);
    c.set_layer(2);

    // Four more layers come down from above, dashed, and stop at the lid.
    float drop = overflow_ ? 1.0f : phase(t, kDropAt, 1.2f, Ease::OutBack);
    draw_waiting_layers(c, b.chip, drop, wpp);
    // Blocked: a bar across the top of the box.
    float blocked = phase(t, overflow_ ? 0.0f : 2.1f, 0.4f, Ease::Smooth);
    c.line({b.interior.min.x, b.chip.max.y + 0.015f * s}, {b.interior.max.x, b.chip.max.y + 0.015f * s},
           std::max(2.5f * wpp, 0.008f * s), with_alpha(palette::backward, blocked));

    if (overflow_) {
      // The walls overflow: what an 8-layer model needs, measured, in two bands that climb past
      // the top of the box; the part above capacity is hatched.
      float rise = phase(t, 0.4f, 1.8f, Ease::InOutCubic);
      for (const Rect* wall : {&b.left_wall, &b.right_wall}) {
        float h = wall->size().y;
        float wg = need_wg * h * rise, op = need_opt * h * rise;
        float inset = 0.012f * s;
        c.box({{wall->min.x + inset, wall->min.y}, {wall->max.x - inset, wall->min.y + wg}},
              with_alpha(split > 0.5f ? palette::weights : mix(palette::weights, palette::memory, 0.35f), 1.0f),
              0.006f * s);
        c.box({{wall->min.x + inset, wall->min.y + wg}, {wall->max.x - inset, wall->min.y + wg + op}},
              with_alpha(split > 0.5f ? palette::optimizer : mix(palette::weights, palette::memory, 0.35f), 1.0f),
              0.006f * s);
        float over = wall->min.y + wg + op - wall->max.y;
        if (over > 0.0f) {
          Rect ext{{wall->min.x, wall->max.y}, {wall->max.x, wall->max.y + over}};
          c.hatched(ext, with_alpha(palette::background, 0.35f), with_alpha(palette::backward, 0.8f), 0.03f * s,
                    0.007f * s, 0.01f * s, with_alpha(palette::backward, 0.9f), std::max(1.5f * wpp, 0.004f * s));
        }
      }
      float label = phase(t, 1.8f, 0.6f, Ease::Smooth);
      c.text("doesn't fit", {b.chip.center().x, b.chip.max.y + 0.06f * s + (need_wg + need_opt - 1.0f) * b.left_wall.size().y},
             0.05f * s, with_alpha(palette::backward, label), Align::Center);
    }
  }

  // Labels over the pair.
  c.set_layer(2);
  Rect a = layout_.chip_rect(0), b2 = layout_.chip_rect(1);
  float s = a.size().x;
  glm::vec2 top{(a.center().x + b2.center().x) * 0.5f, a.max.y + 0.98f * s};
  float la = phase(t, overflow_ ? 0.2f : 1.6f, 0.6f, Ease::Smooth);
  c.text("the model we want · 8 layers", top, 0.055f * s, with_alpha(palette::text, la), Align::Center);
  if (overflow_) {
    const ModelBytes& m8 = story_model_bytes(8)[7];
    char line[200];
    std::snprintf(line, sizeof line, "8 layers: %.2fM weights × 18 bytes = %s, on a %s GPU (measured by the allocator)",
                  m8.params / 1e6, format_bytes(m8.total()).c_str(), format_bytes(toy_capacity_bytes()).c_str());
    c.text(line, {top.x, a.min.y - 0.12f * s}, 0.036f * s, with_alpha(palette::text, phase(t, 1.0f, 0.6f)),
           Align::Center);
    float named = phase(t, 2.8f, 0.6f, Ease::Smooth);
    // The two parts side by side under it, centred as a pair, at whatever size the rule gives.
    const char* weights = "6 bytes: weight and gradient";
    const char* optimizer = "12 bytes: the optimizer's exact copy and two averages";
    const float size = c.text_size(0.034f * s), gap = size;
    const float w1 = c.text_width(weights, size), w2 = c.text_width(optimizer, size);
    const float x = top.x - (w1 + gap + w2) * 0.5f, y = a.min.y - 0.12f * s - std::max(0.08f * s, 1.3f * size);
    c.text(weights, {x, y}, size, with_alpha(palette::weights, named));
    c.text(optimizer, {x + w1 + gap, y}, size, with_alpha(palette::optimizer, named));
  }
  c.set_layer(0);
}

}  // namespace onegpu::app
