#include "app/scene/field_layout.h"

#include <cmath>
#include <stdexcept>

namespace onegpu::app {

FieldLayout::FieldLayout(int cells) {
  constexpr int per_block = kBlockSide * kBlockSide;
  if (cells <= 0 || cells % per_block != 0)
    throw std::invalid_argument("a field holds whole blocks of 64 GPUs");
  int blocks = cells / per_block;
  // About twice as wide as tall, to suit a wide screen: 8 blocks make 4×2.
  block_cols_ = std::max(1, static_cast<int>(std::ceil(std::sqrt(2.0 * blocks) - 1e-9)));
  block_rows_ = (blocks + block_cols_ - 1) / block_cols_;
  const float block = kBlockSide * kPitch + kBlockGap;
  cells_.reserve(cells);
  for (int g = 0; g < cells; ++g) {
    FieldCell c;
    c.gpu = g;
    c.replica = g / per_block;
    c.stage = (g % per_block) / kBlockSide;
    c.column = g % kBlockSide;
    int bx = c.replica % block_cols_, by = c.replica / block_cols_;  // block row 0 at the top
    float x0 = bx * block, y0 = (block_rows_ - 1 - by) * block;
    c.center = {x0 + (c.column + 0.5f) * kPitch, y0 + (c.stage + 0.5f) * kPitch};
    cells_.push_back(c);
  }
  bounds_ = {{0.0f, 0.0f}, {block_cols_ * block - kBlockGap, block_rows_ * block - kBlockGap}};
}

render::Rect FieldLayout::chip_rect(int gpu) const {
  return render::Rect::centered(cells_[gpu].center, glm::vec2(kChip));
}

int FieldLayout::gpu_at(glm::vec2 p) const {
  const float block = kBlockSide * kPitch + kBlockGap;
  int bx = static_cast<int>(std::floor(p.x / block));
  int by_from_bottom = static_cast<int>(std::floor(p.y / block));
  if (bx < 0 || bx >= block_cols_ || by_from_bottom < 0 || by_from_bottom >= block_rows_) return -1;
  int by = block_rows_ - 1 - by_from_bottom;
  int col = static_cast<int>(std::floor((p.x - bx * block) / kPitch));
  int stage = static_cast<int>(std::floor((p.y - by_from_bottom * block) / kPitch));
  if (col < 0 || col >= kBlockSide || stage < 0 || stage >= kBlockSide) return -1;
  int g = (by * block_cols_ + bx) * kBlockSide * kBlockSide + stage * kBlockSide + col;
  if (g >= size() || !chip_rect(g).contains(p)) return -1;
  return g;
}

}  // namespace onegpu::app
