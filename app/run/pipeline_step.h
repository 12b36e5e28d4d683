#pragma once
// One real training step of the 8-layer story model cut into two pipeline stages (pp=2), each
// stage on two GPUs that share its experts (dp=2, ep=2), as chapters 21-23 draw it: four ranks,
// rank = stage·2 + gpu. What the pictures need is read from the engine's virtual clock (when
// each compute op of each rank ran, when activations were handed up and gradients handed down)
// and from each rank's allocator (the bytes it holds).
#include <cstdint>
#include <vector>

#include "trainer/engine/virtual_clock.h"
#include "trainer/plan/plan.h"

namespace onegpu::app {

// One forward or backward compute op of a rank: the layers it worked on, and when.
struct PipeOp {
  int rank = 0;
  bool backward = false;
  int microbatch = 0;
  int layer_begin = 0, layer_end = 0;  // model layers [begin, end), 0-based
  double begin = 0, end = 0;           // virtual seconds from the step's start
};

// All of a rank's work on one microbatch in one direction: first op's begin to last op's end.
struct PipeSpan {
  int rank = 0;
  bool backward = false;
  int microbatch = 0;
  double begin = 0, end = 0;
};

// A hand-over between stages: activations up (forward) or their gradients down (backward).
struct PipeHandoff {
  int from = 0, to = 0;
  bool backward = false;
  int microbatch = 0;
  double sent = 0, arrived = 0;  // the Send's begin and end
};

struct PipelineStep {
  int pp = 0, dp = 0, microbatches = 0;
  std::vector<PipeOp> ops;        // compute ops, in plan order
  std::vector<PipeSpan> spans;    // by rank, then in time order
  std::vector<PipeHandoff> handoffs;
  double pipeline_end = 0;        // last forward/backward op's end (summarize())
  double allreduce_begin = 0, allreduce_end = 0;  // gradients meet (earliest/latest over ranks)
  std::vector<double> meet_begin, meet_end;        // the same per stage
  double step_end = 0;            // last op's end (update included)
  std::vector<double> rank_idle;  // 1 - compute busy / pipeline_end, per rank (summarize())
  std::vector<double> stage_idle; // mean over a stage's ranks
  double bubble = 0;              // mean of stage_idle
  double textbook = 0;            // (p-1)/(m+p-1)
  // Filled by the real run only.
  double loss = 0;
  std::vector<std::int64_t> held_bytes;  // per rank: weights + gradients + optimizer state
  int stage_of(int rank) const { return rank / dp; }
  // Busy time of a rank's compute ops (the complement of its idle time).
  double busy(int rank) const;
};

// Reads a step's picture facts from a plan and its timeline (no maths runs here).
PipelineStep read_pipeline_step(const trainer::Plan& plan, const trainer::Timeline& tl);

// The real step: story8, pp=2 dp=2 ep=2, 1F1B (GPipe for one microbatch: the same order), a
// global batch of 8 texts, each GPU's four cut into `microbatches` (1, 2 or 4). After a
// warm-up, kMeasuredSteps steps run; each op costs the fastest of its measured times (a busy
// machine only ever adds time) and the step is replayed on the virtual clock with those costs.
// Cached per microbatch count.
inline constexpr int kMeasuredSteps = 5;
const PipelineStep& story_pipeline_step(int microbatches);
// Starts measuring the 1, 2 and 4-microbatch steps on a background thread (once), so chapters 22
// and 23 find them ready; a call to story_pipeline_step meanwhile waits for that step only.
void warm_story_pipeline_steps();

// Bytes a rank of that run holds (weights, gradients, optimizer state) right after it is built.
const std::vector<std::int64_t>& story_pipeline_held_bytes();

}  // namespace onegpu::app
