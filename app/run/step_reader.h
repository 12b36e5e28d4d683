#pragma once
// What the pipeline pictures read from one training step: chapters 21-23 (pp=2 on four GPUs)
// and chapter 26 (pp=8 on 64 GPUs) draw from the same facts, read here from a plan and its
// timeline (no maths runs), and the same rule turns a few noisy measured steps into one.
//
//   PipelineStep s = read_step(plan, timeline);        // any plan, any clock (tests: simulate())
//   FastestRuns f = fastest_of(trainer, 3);            // a real run: warm-up, 3 steps, replay
//   PipelineStep real = read_step(trainer.plan(), f.timeline);
//
// Ranks are the trainer's: stage-major, rank = stage·dp + gpu. Times are virtual seconds from
// the step's start.
#include <cstdint>
#include <vector>

#include "trainer/engine/virtual_clock.h"
#include "trainer/plan/plan.h"

namespace onegpu::trainer {
class ParallelTrainer;
}

namespace onegpu::app {

// ---- the step's facts ----

// One forward or backward compute op of a rank: the layers it worked on, and when.
struct PipeOp {
  int rank = 0;
  bool backward = false;
  int microbatch = 0;
  int layer_begin = 0, layer_end = 0;  // model layers [begin, end), 0-based
  double begin = 0, end = 0;
};

// All of a rank's work on one microbatch in one direction: first op's begin to last op's end
// (a stage's layers, with the all-to-alls between them).
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
  int pp = 0, dp = 0, ep = 0, microbatches = 0;
  std::vector<PipeOp> ops;            // compute ops (forward, backward), in plan order
  std::vector<PipeSpan> spans;        // by rank, each rank's in time order
  std::vector<PipeHandoff> handoffs;  // in plan order
  double pipeline_end = 0;            // last forward/backward op's end
  double step_end = 0;                // last op's end (gradient all-reduce and update included)
  std::vector<double> meet_begin, meet_end;  // per stage: its gradients' all-reduce, first begin to last end
  // Idle, two ways, both as shares of [0, pipeline_end):
  //   no compute op running (the engine's summarize(): all-to-alls count as idle), which the
  //   gauges of chapters 22-23 hatch;
  std::vector<double> rank_idle;      // per rank
  std::vector<double> stage_idle;     // mean over a stage's ranks
  double bubble = 0;                  // mean of stage_idle
  //   no microbatch's work under way (gaps between spans), which the cells of chapter 26 hatch.
  std::vector<double> stage_waiting;  // per stage, mean over its ranks
  double waiting = 0;                 // mean of stage_waiting
  double textbook = 0;                // the schedule's textbook bubble (trainer::textbook_bubble)
  // Filled by the caller of a real run only.
  double loss = 0;
  int texts = 0, seq = 0;  // global batch and tokens per text
  int measured_runs = 0;   // steps whose fastest op costs were kept

  int stage_of(int rank) const { return rank / dp; }
  // Busy time of a rank's compute ops (the complement of its idle time).
  double busy(int rank) const;
  // The span of `rank` running at virtual time v, or null (waiting, or outside the pipeline).
  const PipeSpan* span_at(int rank, double v) const;
};

PipelineStep read_step(const trainer::Plan& plan, const trainer::Timeline& tl);

// ---- the fastest of N measured runs ----

// Measured op costs on a shared CPU carry preemption spikes (a 50 µs op sometimes "takes"
// 50 ms), and noise only ever adds time. So: one warm-up step (first touches of memory are not
// the step's cost), then `runs` steps, and the step replayed on the virtual clock with each
// compute op's fastest measured cost. Run the trainer with one worker, so each op's measured
// cost is its own. Trains `runs + 1` steps of `t`; throws Error if its plan changes between them.
struct FastestRuns {
  trainer::Timeline timeline;  // the replay, on t.plan()
  std::vector<double> losses;  // each measured step's loss, in order (the weights move every step)
  int runs = 0;
};
FastestRuns fastest_of(trainer::ParallelTrainer& t, int runs);

}  // namespace onegpu::app
