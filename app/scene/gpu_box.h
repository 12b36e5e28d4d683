#pragma once
// GPU 1 with its lid off, as the one-GPU chapters draw it: two memory walls with capacity
// ticks, the compute strip between them, the model's layers as slabs, and the door at the
// bottom where tokens come in. Everything is placed relative to GPU 1's chip in the field, so
// the story keeps one world from the first chapter to the last.
#include <string>
#include <vector>

#include "render/canvas.h"

namespace onegpu::app {

struct BoxParts {
  render::Rect chip;                 // the chip (the lid's outline)
  render::Rect left_wall, right_wall;
  render::Rect interior;             // between the walls
  render::Rect strip;                // compute, along the floor
  render::Rect door;                 // gap in the floor's middle
  float s = 1.0f;                    // chip side, the unit of everything else
  render::Rect slab(int layer, int drawn_layers) const;  // layer 0 at the bottom
};

BoxParts box_parts(const render::Rect& chip);

struct BoxLook {
  float lid = 0.0f;           // 1: closed package; fades and lifts as it goes to 0
  float walls = 1.0f;         // 0: still the six memory stacks; 1: two full walls
  float ticks = 1.0f;         // capacity ticks' opacity
  std::string capacity_label; // written at the top tick, e.g. "24 MB (toy GPU)"
  // Wall fill as fractions of capacity: weights+gradients (lavender) under optimizer (sand).
  // When `split` is false both are drawn in one neutral memory colour.
  float fill_weights = 0.0f, fill_optimizer = 0.0f;
  float fill_activations = 0.0f;  // on top, while a step holds activations
  bool split = false;
  float strip = 0.2f;         // compute strip brightness, 0 dark .. 1 fully lit
  float strip_swell = 0.0f;   // a one-off swell when the strip is named
  int layers = 0;             // slabs in the box (fully landed)
  int drawn_layers = 4;       // slots the box is divided into
  int first_layer = 0;        // number of the bottom slab's layer, less one (stage 2: 4)
  float dropping = 0.0f;      // the next slab's fall, 0 above the box .. 1 landed
  float hairlines = 0.0f;     // faint lines above the top slab: deeper models
  std::vector<float> tone;    // per-layer re-tone flash 0..1 (after an update)
  float fade = 1.0f;
  float label_room = 1.0f;    // share of a slab its layer's name may take (the rest: experts)
};

void draw_box(render::Canvas& c, const BoxParts& p, const BoxLook& look, float wpp);

// A layer's name in the left `room` share of its slab (the rest holds its experts where they
// are drawn): "Layer 5" where there is room at the text rule's size, the bare "5" where only
// that fits, nothing where not even that does (a small GPU far out in the field).
void draw_layer_label(render::Canvas& c, const render::Rect& slab, int layer_number, float s, glm::vec4 color,
                      float room = 1.0f);

}  // namespace onegpu::app
