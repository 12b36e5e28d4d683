#pragma once
// What chapters 21-23 share: the four GPUs of the two-stage pipeline, each opened up with its
// walls at the bytes its rank's allocator holds, GPUs 1-2 (stage 1, layers 1-4) in their field
// cells and GPUs 3-4 (stage 2, layers 5-8) in the cells above; the layers lit by the op a rank
// is running at a moment of the real step's virtual clock, idle ranks hatched; and a time gauge
// per GPU drawn from the same timeline.
#include <string>

#include "app/run/pipeline_step.h"
#include "app/scene/field_layout.h"
#include "app/scene/gpu_box.h"
#include "render/canvas.h"

namespace onegpu::app {

// Labels and notes beside the gauges are drawn this much larger than the chip-relative sizes
// they were laid out with, so they stay readable on a projector at 1600×900 with the panels on.
inline constexpr float kSmallText = 1.6f;

class PipeScene {
 public:
  static constexpr int kRanks = 4;
  // Field cell of a rank: rank = stage·2 + gpu, stage rows one above the other.
  static int field_gpu(int rank) { return (rank / 2) * FieldLayout::kBlockSide + rank % 2; }
  const FieldLayout& layout() const { return layout_; }
  render::Rect chip(int rank) const { return layout_.chip_rect(field_gpu(rank)); }
  BoxParts box(int rank) const { return box_parts(chip(rank)); }
  float s() const { return FieldLayout::kChip; }
  // The four boxes with room for row labels on the left and `right` world units on the right.
  render::Rect frame(float right, float below) const;
  // The gauge of a rank: beside its stage's row, GPU 1 / 3 on the upper line of the row.
  render::Rect gauge(int rank) const;

 private:
  FieldLayout layout_{512};
};

// How a box shows the step at virtual time v (seconds); v < 0: before the step.
struct StepLook {
  const PipelineStep* step = nullptr;
  double v = -1.0;
  float alpha = 1.0f;
};

// Wall fill of a rank: its allocator's weights + gradients + optimizer bytes over capacity (0
// until the job that builds the run has been).
float held_fill(int rank);
// Box `rank` with its four layers (numbered by stage), its walls filled to `fill` of capacity.
void draw_stage_box(render::Canvas& c, const PipeScene& sc, int rank, float fill, float fade, float wpp);
// Lit layers and the waiting hatch for rank at the look's time.
void draw_step_on_box(render::Canvas& c, const PipeScene& sc, int rank, const StepLook& look, float wpp);
// A hand-over in flight: a bead from one stage's box to the other, `progress` 0..1 of the way.
void draw_handoff(render::Canvas& c, const PipeScene& sc, const PipeHandoff& h, float progress, float alpha);
// Gradients meeting in the gap between a stage's two GPUs (its all-reduce), 0..1.
void draw_gradients_meet(render::Canvas& c, const PipeScene& sc, int stage, float amount);
// A rank's gauge: its compute ops up to v on a scale of `full` seconds, the rest hatched idle;
// `cells` tick marks divide it. Returns nothing; the gauge's rect is sc.gauge(rank) unless given.
void draw_gauge(render::Canvas& c, const render::Rect& r, const PipelineStep& step, int rank, double v,
                double full, int cells, float alpha, float s, float wpp);
// Row labels on the left: "stage 1 · layers 1–4" and "stage 2 · layers 5–8".
void draw_stage_labels(render::Canvas& c, const PipeScene& sc, float alpha);
// "GPU n" under each chip.
void draw_gpu_names(render::Canvas& c, const PipeScene& sc, float alpha);
std::string percent(double fraction);

}  // namespace onegpu::app
