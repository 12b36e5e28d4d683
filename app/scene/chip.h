#pragma once
// One GPU chip as the story draws it: a package with a compute die in the middle and three
// memory stacks on each side. The same drawing serves the 24-pixel cell in the field and the
// full-screen close-up; `detail` decides how much of the inside is shown.
#include "render/canvas.h"

namespace onegpu::app {

struct ChipLook {
  float power = 0.0f;   // 0 switched off, 1 lit
  float flash = 0.0f;   // extra glow while switching on
  float detail = 0.0f;  // 0: field icon; 1: compute tiles and memory layers visible
  float tiles = 1.0f;   // close-up: how far the tiles have lit, from the centre out (0..1)
  float memory = 1.0f;  // close-up: how far the memory stacks have traced up (0..1)
  float fade = 1.0f;    // overall opacity
};

struct ChipParts {
  render::Rect body, die;
  render::Rect stacks[6];  // left column bottom to top, then right column bottom to top
};

ChipParts chip_parts(const render::Rect& chip);
void draw_chip(render::Canvas& c, const render::Rect& chip, const ChipLook& look, float wpp);

}  // namespace onegpu::app
