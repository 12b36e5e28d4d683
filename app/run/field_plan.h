#pragma once
// The storyboard's 512-GPU run as the trainer's own plan lays it out: the `scale` model (32
// layers, 64 experts) over 8 pipeline stages × 64 data-parallel ranks, experts split 8 ways
// inside each group of 8. The field draws every GPU where this plan puts its rank: a block of
// the field is one expert-parallel group of every stage, a row of a block is one machine.
#include <cstdint>
#include <string>

#include "app/scene/field_layout.h"
#include "trainer/plan/layout.h"

namespace onegpu::app {

struct GpuShare {
  int rank = 0;
  int stage = 0;                        // 0-based
  int first_layer = 0, end_layer = 0;   // [first, end), 0-based
  int first_expert = 0, end_expert = 0; // of every layer it holds
  int copy = 0;                         // data-parallel index inside its stage
};

class FieldPlan {
 public:
  FieldPlan();
  const trainer::Layout& layout() const { return layout_; }
  int world() const { return layout_.world(); }
  int pp() const { return layout_.config().pp; }
  int dp() const { return layout_.config().dp; }
  int ep() const { return layout_.config().ep; }
  int layers() const { return layout_.config().layers; }
  int experts() const { return layout_.config().experts; }
  // The rank the plan gives field cell `gpu` (FieldLayout numbering), and back.
  int rank_of_cell(const FieldCell& cell) const;
  int cell_of_rank(int rank) const;
  GpuShare share_of_cell(const FieldCell& cell) const;

 private:
  trainer::Layout layout_;
};

const FieldPlan& field_plan();

// What the plan's share for one GPU costs, from the allocator: the scale model's parameter
// store built as that rank's shard (its layers, its experts, the embedding on stage 1) under a
// fresh tracking allocator. Vocabulary as the story tokenizer's default (1,024).
struct ShareBytes {
  std::int64_t params = 0;
  std::int64_t weights = 0, gradients = 0, optimizer = 0;
  std::int64_t total() const { return weights + gradients + optimizer; }
};
ShareBytes share_bytes(const GpuShare& share);
// The share of GPU 1 (field cell 0), made once by a job on the app's job runner
// (app/run/posted.h): the _ready version queues it and returns null until it is made (draw());
// the other waits (prepare(), tests).
const ShareBytes* gpu_one_share_bytes_ready();
const ShareBytes& gpu_one_share_bytes();
std::string gpu_one_share_bytes_activity();

}  // namespace onegpu::app
