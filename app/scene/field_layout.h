#pragma once
// Where every GPU of the field sits. The field is built from blocks of 64 GPUs, eight stages
// (rows, stage 1 at the bottom) of eight GPUs (one machine per row), the way the story's last
// chapters assemble it: copy the 64-GPU block eight times and you have the 512 cells.
#include <vector>

#include <glm/vec2.hpp>

#include "render/camera.h"

namespace onegpu::app {

struct FieldCell {
  int gpu;        // 0-based; GPU 1 in the story is gpu 0
  int replica;    // which 64-GPU block
  int stage;      // row inside the block, 0 = bottom
  int column;     // GPU inside its machine (row)
  glm::vec2 center;
};

class FieldLayout {
 public:
  static constexpr int kBlockSide = 8;
  static constexpr float kPitch = 1.0f;     // centre to centre, world units
  static constexpr float kChip = 0.78f;     // chip side
  static constexpr float kBlockGap = 0.9f;  // extra space between blocks

  explicit FieldLayout(int cells = 512);
  int size() const { return static_cast<int>(cells_.size()); }
  const FieldCell& cell(int gpu) const { return cells_[gpu]; }
  const std::vector<FieldCell>& cells() const { return cells_; }
  render::Rect bounds() const { return bounds_; }
  render::Rect chip_rect(int gpu) const;
  int block_columns() const { return block_cols_; }
  int block_rows() const { return block_rows_; }
  // The GPU whose chip contains p, or -1.
  int gpu_at(glm::vec2 p) const;

 private:
  std::vector<FieldCell> cells_;
  render::Rect bounds_;
  int block_cols_ = 1, block_rows_ = 1;
};

}  // namespace onegpu::app
