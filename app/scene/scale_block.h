#pragma once
// The 64-GPU block of chapters 24-26: the field's first block of 64 cells, eight stage rows
// (stage 1 at the bottom, one machine of eight GPUs per row) where GPU (stage, column) is field
// cell stage·8 + column, so rank r of the 64-rank run sits in cell r. Stage rows and expert
// columns are labelled around it, and a time chart per stage can stand to its right.
#include <string>

#include "app/scene/field_layout.h"
#include "render/canvas.h"

namespace onegpu::app {

class ScaleBlock {
 public:
  static constexpr int kStages = 8, kColumns = 8, kLayersPerStage = 4;
  const FieldLayout& layout() const { return layout_; }
  static int cell(int stage, int column) { return stage * FieldLayout::kBlockSide + column; }
  render::Rect chip(int stage, int column) const { return layout_.chip_rect(cell(stage, column)); }
  render::Rect block() const;             // the 64 cells' bounds
  render::Rect view() const;              // the three chapters' framing: block, labels, chart room
  render::Rect four_gpus_view() const;    // where chapters 21-23 leave the camera: stages 1-2, GPUs 1-4
  // Chart row of a stage, beside its row of GPUs.
  render::Rect chart_row(int stage) const;
  float row_y(int stage) const { return chip(stage, 0).center().y; }

 private:
  FieldLayout layout_{512};
};

// An opened GPU of stage `stage`: walls at `fill` of capacity, the stage's four layer slabs
// (numbered 4·stage+1..), the lid closing as `lid` goes to 1. `label` is written at the top tick.
struct StageGpuLook {
  float fill = 0.0f, lid = 0.0f, fade = 1.0f;
  std::string label;
};
void draw_stage_gpu(render::Canvas& c, const render::Rect& chip, int stage, const StageGpuLook& look, float wpp);

// Every field cell except the block's first `columns` columns of `stages` rows: an empty
// socket, faint (alpha `a`).
void draw_empty_sockets(render::Canvas& c, const ScaleBlock& b, int stages, int columns, float a, float wpp);

// "Stage k · layers a–b" left of the rows, for the first `stages` rows.
void draw_stage_labels(render::Canvas& c, const ScaleBlock& b, int stages, float a);
// A bracket down the left of the stage labels with `text` at its top.
void draw_left_bracket(render::Canvas& c, const ScaleBlock& b, int stages, const std::string& text, float a,
                       float wpp);
// A check mark in a disc.
void draw_check(render::Canvas& c, glm::vec2 at, float r, float a, float wpp);
// Above column k < shown: the experts it holds, of `experts` per layer split over `columns` GPUs.
void draw_expert_heads(render::Canvas& c, const ScaleBlock& b, int columns, int experts, int shown, float a);
// Top right of the block: "N GPUs".
void draw_gpu_count(render::Canvas& c, const ScaleBlock& b, int n, float a);

}  // namespace onegpu::app
