#pragma once
// What the pipeline pictures read from one training step: chapters 21-23 (pp=2 on four GPUs)
// and chapter 26 (pp=8 on 64 GPUs) draw from the same facts, read here from the run state's
// record of the step (app/live/run_state.h: the spans the Lab draws, fed by the engine's
// events), and the same rule turns a few noisy measured steps into one.
//
//   FastestRuns f = fastest_of(trainer, 3);            // a real run: warm-up, 3 steps, replay
//   RecordedStep r = record_step(recorded_run(trainer), f.timeline, f.losses.back());
//   const PipelineStep& real = r.step;                 // read_step(r.state, *r.state.last_complete())
//   PipelineStep s = read_step(plan, timeline);        // any plan, any clock (tests: simulate()):
//                                                      // recorded the same way, then read
//
// A recorded run is a LiveRun with the plans and no event stream; its RunState is fed the
// replayed step's events (trainer::timeline_events, then a StepEnd with the loss) through
// RunState::consume(), exactly as the live run's drained events are.
//
// Ranks are the trainer's: stage-major, rank = stage·dp + gpu. Times are virtual seconds from
// the step's start.
#include <cstdint>
#include <vector>

#include <memory>

#include "app/live/run_state.h"
#include "trainer/engine/virtual_clock.h"
#include "trainer/plan/plan.h"

namespace onegpu::trainer {
class ParallelTrainer;
struct Batch;
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

// Reads a complete step of a recorded or live run. Timing comes from the record's spans (one per
// op of the plan) and its idle shares from the record (RunState::close); a span's op id names its
// op in the run's plan, which adds what only the plan says: a compute op's last layer and what a
// send carries. Throws Error if the record is not complete or misses spans.
PipelineStep read_step(const RunState& state, const RunStep& rec);

// ---- recorded runs ----

// A run kept for drawing: its plans (no event stream) and the run state its events fed.
struct RecordedStep {
  RunState state;     // one complete step (step 0 of state.run())
  PipelineStep step;  // read_step(state, its step), with measured_runs set
};
// The recorded run of a plan: a LiveRun with `plan` as every step's plan and no events.
std::shared_ptr<const LiveRun> recorded_run(const trainer::Plan& plan, const trainer::ModelConfig& model = {},
                                            int texts = 0, int seq = 0);
std::shared_ptr<const LiveRun> recorded_run(const trainer::ParallelTrainer& t);
// Feeds a timeline of `run`'s plan as step 0's events, then its StepEnd (loss, tokens, virtual
// end), into a fresh RunState, and reads the step from it.
RecordedStep record_step(std::shared_ptr<const LiveRun> run, const trainer::Timeline& tl, double loss = 0,
                         int measured_runs = 0);

// A plan and a timeline of it (simulated, or replayed): recorded as above, then read.
PipelineStep read_step(const trainer::Plan& plan, const trainer::Timeline& tl);

// ---- the fastest of N measured runs ----

// Measured op costs on a shared CPU carry preemption spikes (a 50 µs op sometimes "takes"
// 50 ms), and noise only ever adds time. So: one warm-up step (first touches of memory are not
// the step's cost), then `runs` steps, and the step replayed on the virtual clock with each
// compute op's fastest measured cost. Run the trainer with one worker, so each op's measured
// cost is its own. Trains `runs + 1` steps of `t` (on `batch` every time when given, else on the
// batches it samples); throws Error if its plan changes between them.
struct FastestRuns {
  trainer::Timeline timeline;  // the replay, on t.plan()
  std::vector<double> losses;  // each measured step's loss, in order (the weights move every step)
  int runs = 0;
};
FastestRuns fastest_of(trainer::ParallelTrainer& t, int runs, const trainer::Batch* batch = nullptr);

}  // namespace onegpu::app
