#include "app/scene/scale_block.h"

#include <algorithm>
#include <cmath>

#include "app/scene/gpu_box.h"
#include "render/palette.h"

namespace onegpu::app {

using namespace render;

Rect ScaleBlock::block() const { return {chip(0, 0).min, chip(kStages - 1, kColumns - 1).max}; }

Rect ScaleBlock::view() const {
  Rect b = block();
  // Left: stage labels and the bracket; right: a chart as wide as the block; below: notes.
  return {{b.min.x - 3.4f, b.min.y - 2.1f}, {b.max.x + 10.0f, b.max.y + 1.3f}};
}

Rect ScaleBlock::four_gpus_view() const {
  Rect a = chip(0, 0), top = chip(1, 1);
  return {{a.min.x - 0.9f, a.min.y - 0.5f}, {top.max.x + 0.5f, top.max.y + 0.3f}};
}

Rect ScaleBlock::chart_row(int stage) const {
  Rect b = block();
  float y = row_y(stage), h = 0.46f;
  return {{b.max.x + 1.2f, y - h * 0.5f}, {b.max.x + 8.6f, y + h * 0.5f}};
}

void draw_stage_gpu(Canvas& c, const Rect& chip, int stage, const StageGpuLook& look, float wpp) {
  BoxParts p = box_parts(chip);
  BoxLook box;
  box.fill_weights = look.fill;
  box.fade = look.fade;
  box.capacity_label = look.label;
  box.layers = 0;  // the slabs are drawn here, numbered by stage
  draw_box(c, p, box, wpp);
  const float s = p.s, a = look.fade * (1.0f - look.lid);
  const float line = std::max(1.5f * wpp, 0.004f * s);
  for (int l = 0; l < ScaleBlock::kLayersPerStage && a > 0.0f; ++l) {
    Rect r = p.slab(l, ScaleBlock::kLayersPerStage);
    c.box(r, with_alpha(mix(palette::weights, palette::chip_body, 0.55f), a), 0.012f * s, with_alpha(palette::weights, a),
          line);
    draw_layer_label(c, r, stage * ScaleBlock::kLayersPerStage + l + 1, s, with_alpha(palette::text, a), 0.4f);
  }
  if (look.lid > 0.0f) {
    glm::vec2 lift{0.0f, (1.0f - look.lid) * 0.25f * s};
    float la = look.fade * look.lid;
    c.box({chip.min + lift, chip.max + lift}, with_alpha(palette::chip_body, la), 0.09f * s,
          with_alpha(palette::chip_edge, la), std::max(wpp, 0.012f * s));
  }
}

void draw_empty_sockets(Canvas& c, const ScaleBlock& b, int stages, int columns, float a, float wpp) {
  if (a <= 0.0f) return;
  const FieldLayout& L = b.layout();
  for (const FieldCell& cell : L.cells()) {
    if (cell.replica == 0 && cell.stage < stages && cell.column < columns) continue;
    Rect r = L.chip_rect(cell.gpu);
    c.box(r, with_alpha(palette::chip_off, 0.6f * a), 0.09f * FieldLayout::kChip, with_alpha(palette::chip_off_edge, a),
          std::max(wpp, 0.012f));
  }
}

void draw_stage_labels(Canvas& c, const ScaleBlock& b, int stages, float a) {
  if (a <= 0.0f) return;
  const float x = b.block().min.x - 0.25f;
  for (int st = 0; st < stages; ++st) {
    // Two lines around the row's middle, spaced by their real sizes (the rule may raise them).
    const float big = c.text_size(0.25f), small = c.text_size(0.17f), gap = std::max(0.26f, 0.3f * big + 0.95f * small);
    const float y = b.row_y(st) + 0.02f + std::max(0.0f, 0.5f * (gap - 0.26f));
    c.text("Stage " + std::to_string(st + 1), {x, y}, big, with_alpha(palette::text, a), Align::Right);
    c.text("layers " + std::to_string(st * 4 + 1) + "–" + std::to_string(st * 4 + 4), {x, y - gap}, small,
           with_alpha(palette::text_dim, a), Align::Right);
  }
}

void draw_left_bracket(Canvas& c, const ScaleBlock& b, int stages, const std::string& text, float a, float wpp) {
  if (a <= 0.0f) return;
  Rect lo = b.chip(0, 0), hi = b.chip(stages - 1, 0);
  // Left of the stage labels however large the rule makes them.
  const float labels = std::max(c.text_width("Stage 8", 0.25f), c.text_width("layers 29–32", 0.17f));
  const float x = std::min(lo.min.x - 2.0f, b.block().min.x - 0.25f - labels - 0.12f), w = std::max(2.0f * wpp, 0.02f);
  glm::vec4 col = with_alpha(palette::text_dim, a);
  c.line({x, lo.min.y}, {x, hi.max.y}, w, col);
  c.line({x, lo.min.y}, {x + 0.15f, lo.min.y}, w, col);
  c.line({x, hi.max.y}, {x + 0.15f, hi.max.y}, w, col);
  c.text(text, {x - 0.1f, hi.max.y + 0.62f}, 0.26f, with_alpha(palette::text, a), Align::Left);
}

void draw_check(Canvas& c, glm::vec2 at, float r, float a, float wpp) {
  if (a <= 0.0f) return;
  c.disc(at, r, with_alpha(palette::lit, a));
  const float w = std::max(2.5f * wpp, 0.16f * r);
  glm::vec4 col = with_alpha(palette::background, a);
  glm::vec2 p0 = at + glm::vec2(-0.48f, 0.02f) * r, p1 = at + glm::vec2(-0.12f, -0.36f) * r,
            p2 = at + glm::vec2(0.5f, 0.4f) * r;
  c.line(p0, p1, w, col);
  c.line(p1, p2, w, col);
}

void draw_expert_heads(Canvas& c, const ScaleBlock& b, int columns, int experts, int shown, float a) {
  if (a <= 0.0f) return;
  const int per = experts / std::max(1, columns);
  const float y = b.block().max.y + 0.18f;
  // Each column's range over it, named "experts" on their left, or none of them where one
  // would not fit its column (the chapters say how the experts are shared in words too; the
  // name alone read as a line under the bracket's title).
  const float pitch = columns > 1 ? b.chip(0, 1).center().x - b.chip(0, 0).center().x : 1.0f;
  const int n = std::min(columns, shown);
  bool fit = true;
  for (int k = 0; k < n; ++k)
    fit &= c.text_width(std::to_string(k * per + 1) + "–" + std::to_string(k * per + per), 0.21f) < 0.92f * pitch;
  if (fit && n > 0) c.text("experts", {b.block().min.x - 0.25f, y}, 0.19f, with_alpha(palette::text_dim, a), Align::Right);
  for (int k = 0; k < n && fit; ++k) {
    float x = b.chip(0, k).center().x;
    c.text(std::to_string(k * per + 1) + "–" + std::to_string(k * per + per), {x, y}, 0.21f,
           with_alpha(palette::text, a), Align::Center);
  }
}

void draw_gpu_count(Canvas& c, const ScaleBlock& b, int n, float a) {
  if (a <= 0.0f) return;
  Rect bl = b.block();
  c.text(std::to_string(n) + " GPUs", {bl.max.x, bl.max.y + 0.62f}, 0.34f, with_alpha(palette::text, a), Align::Right);
}

}  // namespace onegpu::app
