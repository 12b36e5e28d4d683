#include "app/scene/chip.h"

#include <algorithm>
#include <cmath>

#include "render/palette.h"
#include "render/tween.h"

namespace onegpu::app {

using namespace render;

ChipParts chip_parts(const Rect& chip) {
  ChipParts p;
  glm::vec2 c = chip.center();
  float s = chip.size().x;
  p.body = chip;
  p.die = Rect::centered(c, {0.40f * s, 0.64f * s});
  for (int side = 0; side < 2; ++side)
    for (int k = 0; k < 3; ++k)
      p.stacks[side * 3 + k] =
          Rect::centered(c + glm::vec2((side ? 0.335f : -0.335f) * s, (k - 1) * 0.215f * s),
                         {0.15f * s, 0.175f * s});
  return p;
}

namespace {

// A memory stack drawn as if traced by a pen: both sides rise from the bottom edge, then the
// top closes from the corners inward; the fill and the stacked dies follow the pen up.
void traced_stack(Canvas& c, const Rect& r, float progress, float alpha, float line_w) {
  glm::vec4 edge = with_alpha(palette::memory, alpha);
  float rise = ease(Ease::InOutSine, phase(progress, 0.0f, 0.75f));
  float close = ease(Ease::OutCubic, phase(progress, 0.7f, 0.3f));
  float h = r.size().y, w = r.size().x;
  if (rise > 0.0f) {
    Rect filled{r.min, {r.max.x, r.min.y + h * rise}};
    c.box(filled, with_alpha(palette::memory_fill, alpha * 0.9f));
    int layers = 4;
    for (int i = 1; i < layers; ++i) {
      float y = r.min.y + h * i / layers;
      if (y < filled.max.y)
        c.line({r.min.x + w * 0.12f, y}, {r.max.x - w * 0.12f, y}, line_w * 0.6f,
               with_alpha(palette::memory, alpha * 0.45f));
    }
    c.line({r.min.x, r.min.y}, {r.max.x, r.min.y}, line_w, edge);
    c.line({r.min.x, r.min.y}, {r.min.x, r.min.y + h * rise}, line_w, edge);
    c.line({r.max.x, r.min.y}, {r.max.x, r.min.y + h * rise}, line_w, edge);
  }
  if (close > 0.0f) {
    float half = w * 0.5f * close;
    c.line({r.min.x, r.max.y}, {r.min.x + half, r.max.y}, line_w, edge);
    c.line({r.max.x, r.max.y}, {r.max.x - half, r.max.y}, line_w, edge);
  }
}

}  // namespace

void draw_chip(Canvas& c, const Rect& chip, const ChipLook& look, float wpp) {
  ChipParts p = chip_parts(chip);
  float s = chip.size().x;
  float a = look.fade;
  float power = std::clamp(look.power, 0.0f, 1.0f);
  float edge_w = std::max(wpp, 0.012f * s);

  // Far out (a field of thousands), a chip is a few pixels wide and its parts are smaller than
  // a pixel: each costs a whole instance to upload, set up and shade, for nothing one can see.
  // Under kFewPx the stacks go (about a pixel wide); under kDotPx the chip is one box whose
  // colour mixes its parts by the area they cover. Fields of 512 never get that small.
  // Under kColumnPx (a field of 4,096) the stacks are under two pixels wide and the gaps
  // between them under half a pixel: each side's three become one box, its colour mixed with the
  // package's by the share of the column the stacks cover.
  constexpr float kColumnPx = 12.0f, kFewPx = 8.0f, kDotPx = 5.0f;
  const float px = wpp > 0.0f ? s / wpp : 1e9f;
  const bool far = look.detail <= 0.0f && px < kFewPx, dot = far && px < kDotPx;
  const bool columns = look.detail <= 0.0f && !far && px < kColumnPx;

  // Package.
  // A glow only while switching on: at rest a field of 512 large soft quads would cost more
  // fill than everything else in the frame, for a barely visible haze.
  if (look.flash > 0.01f)
    c.glow(p.die, with_alpha(palette::lit, a * 0.5f * look.flash), 0.04f * s, 0.45f * s);
  const glm::vec4 body_col = mix(palette::chip_off, palette::chip_body, power);
  const glm::vec4 edge_col = with_alpha(mix(palette::chip_off_edge, palette::chip_edge, power), a);
  // Compute die: a plain lit block from afar, a grid of tiles up close.
  glm::vec4 die_col = mix(palette::chip_off_edge, mix(palette::lit_dim, palette::lit, 0.85f), power);
  const glm::vec4 stack_col = mix(palette::chip_off_edge, palette::memory_fill, power);
  if (dot) {
    // The die covers 0.40 x 0.64 of the chip, the six stacks 6 x 0.15 x 0.175.
    constexpr float kDie = 0.40f * 0.64f, kStacks = 6 * 0.15f * 0.175f;
    const glm::vec4 avg = body_col * (1.0f - kDie - kStacks) + die_col * kDie + stack_col * kStacks;
    c.box(p.body, with_alpha(avg, a), 0.09f * s, edge_col, edge_w);
    return;
  }
  c.box(p.body, with_alpha(body_col, a), 0.09f * s, edge_col, edge_w);

  float icon = 1.0f - look.detail;
  if (icon > 0.0f) c.box(p.die, with_alpha(die_col, a * icon), 0.04f * s);
  if (look.detail > 0.0f) {
    float d = look.detail * a;
    c.box(p.die, with_alpha(palette::substrate, d), 0.03f * s, with_alpha(palette::chip_edge, d), edge_w * 0.6f);
    const int cols = 6, rows = 10;
    glm::vec2 dsz = p.die.size();
    float gap = 0.012f * s;
    glm::vec2 tile{(dsz.x - gap * (cols + 1)) / cols, (dsz.y - gap * (rows + 1)) / rows};
    glm::vec2 centre = p.die.center();
    float max_r = glm::length(dsz * 0.5f);
    for (int y = 0; y < rows; ++y)
      for (int x = 0; x < cols; ++x) {
        glm::vec2 tc{p.die.min.x + gap + tile.x * 0.5f + x * (tile.x + gap),
                     p.die.min.y + gap + tile.y * 0.5f + y * (tile.y + gap)};
        float r = glm::length(tc - centre) / max_r;  // 0 centre .. 1 corner
        float lit = ease(Ease::OutCubic, phase(look.tiles, r * 0.7f, 0.3f)) * power;
        c.box(Rect::centered(tc, tile), with_alpha(mix(palette::lit_dim, palette::lit, lit), d * (0.55f + 0.45f * lit)),
              0.006f * s);
      }
  }

  // Memory stacks.
  if (columns) {
    // Stacks 0.175 high at a 0.215 pitch: three cover 0.525 of the 0.605 column.
    constexpr float kCovered = 3 * 0.175f / (2 * 0.215f + 0.175f);
    const glm::vec4 col = mix(body_col, stack_col, kCovered);
    for (int side = 0; side < 2; ++side) {
      const Rect& lo = p.stacks[side * 3];
      const Rect& hi = p.stacks[side * 3 + 2];
      c.box({lo.min, hi.max}, with_alpha(col, a * icon), 0.02f * s);
    }
    return;
  }
  for (int i = 0; i < 6; ++i) {
    if (icon > 0.0f && !far) c.box(p.stacks[i], with_alpha(stack_col, a * icon), 0.02f * s);
    if (look.detail > 0.0f) {
      // Left and right columns trace together, bottom stack first.
      float start = (i % 3) * 0.18f;
      float prog = phase(look.memory, start, 1.0f - 0.36f);
      traced_stack(c, p.stacks[i], prog, look.detail * a, std::max(wpp * 1.5f, 0.006f * s));
    }
  }
}

}  // namespace onegpu::app
