#include "app/scene/gpu_box.h"

#include <algorithm>
#include <cmath>

#include "app/scene/chip.h"
#include "render/palette.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;

BoxParts box_parts(const Rect& chip) {
  BoxParts p;
  p.chip = chip;
  p.s = chip.size().x;
  glm::vec2 c = chip.center();
  float s = p.s;
  p.left_wall = {{c.x - 0.41f * s, c.y - 0.42f * s}, {c.x - 0.26f * s, c.y + 0.42f * s}};
  p.right_wall = {{c.x + 0.26f * s, c.y - 0.42f * s}, {c.x + 0.41f * s, c.y + 0.42f * s}};
  p.interior = {{c.x - 0.23f * s, c.y - 0.42f * s}, {c.x + 0.23f * s, c.y + 0.42f * s}};
  p.strip = {{p.interior.min.x, c.y - 0.42f * s}, {p.interior.max.x, c.y - 0.37f * s}};
  p.door = Rect::centered({c.x, chip.min.y}, {0.16f * s, 0.03f * s});
  return p;
}

Rect BoxParts::slab(int layer, int drawn_layers) const {
  // Slabs fill the interior above the strip, leaving the top band for hairlines.
  float bottom = strip.max.y + 0.03f * s, top = interior.max.y - 0.14f * s;
  float pitch = (top - bottom) / std::max(1, drawn_layers);
  float y0 = bottom + pitch * layer;
  return {{interior.min.x + 0.02f * s, y0 + 0.012f * s}, {interior.max.x - 0.02f * s, y0 + pitch - 0.012f * s}};
}

void draw_box(Canvas& c, const BoxParts& p, const BoxLook& look, float wpp) {
  const float s = p.s, a = look.fade;
  const float line = std::max(1.5f * wpp, 0.004f * s);

  // The package floor and its outline stay as the box; the lid fades as it lifts.
  c.box(p.chip, with_alpha(palette::substrate, a * 0.9f), 0.09f * s, with_alpha(palette::chip_edge, a * 0.8f),
        std::max(wpp, 0.008f * s));

  // Memory: six stacks grow into two walls.
  ChipParts chip = chip_parts(p.chip);
  float w = ease(Ease::InOutCubic, look.walls);
  for (int side = 0; side < 2; ++side) {
    const Rect& wall = side ? p.right_wall : p.left_wall;
    if (w < 1.0f) {
      for (int k = 0; k < 3; ++k) {
        // The three stacks slide together and stretch into one wall.
        const Rect& st = chip.stacks[side * 3 + k];
        Rect morph = Rect::centered({wall.center().x, wall.center().y + (k - 1) * (1.0f - w) * 0.215f * s},
                                    {st.size().x, lerp(st.size().y, wall.size().y, w)});
        c.box(morph, with_alpha(palette::memory_fill, a * 0.8f), 0.015f * s, with_alpha(palette::memory, a), line);
      }
      continue;
    }
    c.box(wall, with_alpha(palette::memory_fill, a * 0.55f), 0.015f * s, with_alpha(palette::memory, a), line);
    // Fill from the bottom: weights and gradients, then optimizer state, then activations.
    float h = wall.size().y - 2.0f * line;
    float y = wall.min.y + line;
    auto band = [&](float frac, glm::vec4 col) {
      if (frac <= 0.0f) return;
      float top = std::min(y + h * frac, wall.max.y - line);
      c.box({{wall.min.x + line, y}, {wall.max.x - line, top}}, with_alpha(col, a), 0.006f * s);
      y = top;
    };
    if (look.split) {
      band(look.fill_weights, palette::weights);
      band(look.fill_optimizer, palette::optimizer);
    } else {
      band(look.fill_weights + look.fill_optimizer, mix(palette::weights, palette::memory, 0.35f));
    }
    band(look.fill_activations, with_alpha(palette::forward, 0.7f));
    // Capacity ticks on the inner face: quarters, the top one labelled.
    if (look.ticks > 0.0f) {
      for (int q = 1; q <= 4; ++q) {
        float ty = wall.min.y + line + h * q / 4.0f;
        float x_in = side ? wall.min.x : wall.max.x;
        float len = (q == 4 ? 0.05f : 0.03f) * s * (side ? -1.0f : 1.0f);
        c.line({x_in, ty}, {x_in + len, ty}, line, with_alpha(palette::text_dim, a * look.ticks));
      }
    }
  }
  // The capacity in the band between the walls' tops and the chip's edge, where it fits at the
  // rule's size (a GPU seen from far has no room for it; the chapters say it elsewhere).
  const Rect band{{p.left_wall.min.x, p.left_wall.max.y}, {p.right_wall.max.x, p.chip.max.y - 0.01f * s}};
  if (look.ticks > 0.0f && !look.capacity_label.empty() && c.text_fits(look.capacity_label, band)) {
    c.text_in(look.capacity_label, band, 0.036f * s, with_alpha(palette::text_dim, a * look.ticks), Align::Left);
  }

  // Compute strip along the floor.
  float glow = std::clamp(look.strip + look.strip_swell * 0.8f, 0.0f, 1.0f);
  if (glow > 0.05f)
    c.glow(p.strip, with_alpha(palette::lit, a * glow * 0.5f), 0.02f * s, (0.03f + 0.05f * look.strip_swell) * s);
  c.box(p.strip, with_alpha(mix(palette::lit_dim, palette::lit, glow), a), 0.02f * s);

  // Layers.
  for (int l = 0; l < look.layers + (look.dropping > 0.0f ? 1 : 0) && l < look.drawn_layers; ++l) {
    Rect r = p.slab(l, look.drawn_layers);
    float fall = l < look.layers ? 0.0f : 1.0f - ease(Ease::OutCubic, look.dropping);
    glm::vec2 off{0.0f, fall * 0.9f * s};
    float al = a * (l < look.layers ? 1.0f : std::min(1.0f, look.dropping * 3.0f));
    float tone = l < static_cast<int>(look.tone.size()) ? look.tone[l] : 0.0f;
    glm::vec4 fill = mix(mix(palette::weights, palette::chip_body, 0.55f), palette::weights, tone);
    c.box({r.min + off, r.max + off}, with_alpha(fill, al), 0.012f * s, with_alpha(palette::weights, al), line);
    draw_layer_label(c, {r.min + off, r.max + off}, look.first_layer + l + 1, s, with_alpha(palette::text, al),
                     look.label_room);
  }
  if (look.hairlines > 0.0f) {
    Rect top = p.slab(look.drawn_layers - 1, look.drawn_layers);
    for (int i = 1; i <= 5; ++i) {
      float y = top.max.y + i * 0.02f * s;
      c.line({top.min.x, y}, {top.max.x, y}, wpp, with_alpha(palette::weights, a * look.hairlines * (0.5f - i * 0.07f)));
    }
  }

  // The lid: the package's face, lifting and fading.
  if (look.lid > 0.0f) {
    glm::vec2 lift{0.0f, (1.0f - look.lid) * 0.25f * s};
    c.box({p.chip.min + lift, p.chip.max + lift}, with_alpha(palette::chip_body, a * look.lid), 0.09f * s,
          with_alpha(palette::chip_edge, a * look.lid), std::max(wpp, 0.012f * s));
  }
}

void draw_layer_label(Canvas& c, const Rect& slab, int layer_number, float s, glm::vec4 color, float room) {
  const Rect area{{slab.min.x + 0.02f * s, slab.min.y}, {slab.min.x + room * slab.size().x - 0.01f * s, slab.max.y}};
  const std::string words = "Layer " + std::to_string(layer_number), number = std::to_string(layer_number);
  if (c.text_fits(words, area) && c.text_width(words, 0.034f * s) <= area.size().x)
    c.text_in(words, area, 0.034f * s, color);
  else if (c.text_fits(number, area))
    c.text_in(number, area, 0.034f * s, color);
}

}  // namespace onegpu::app
