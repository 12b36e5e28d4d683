#pragma once
// The runs behind chapters 24-26 (deeper, wider, one step on 64 GPUs):
//   deeper  the story model grown to 32 layers, split into 8 stages of 2 GPUs (pp=8, dp=2,
//           ep=2): 16 ranks, of which we read each rank's allocator after it is built;
//   wider   the `scale` preset (32 layers, 64 experts, top-2) on 8 stages of 8 GPUs (pp=8,
//           dp=8, ep=8): 64 ranks, allocator bytes again;
//   step    one real 1F1B training step of that 64-rank run, 8 microbatches per first-stage GPU.
// Measured op costs on a shared CPU carry preemption spikes (a 50 µs op sometimes "takes"
// 50 ms), so the step runs three times and every compute op is re-timed on the virtual clock
// with the fastest of its measured costs.
// All of it runs on one background thread (the 64-rank run takes seconds): the chapters ask
// what is ready and show progress until it is.
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/engine/virtual_clock.h"
#include "trainer/plan/plan.h"

namespace onegpu::app {

// All of a rank's work on one microbatch in one direction: first op's begin to last op's end
// (a stage's layers, with the all-to-alls between them).
struct ScaleSpan {
  int rank = 0;
  bool backward = false;
  int microbatch = 0;
  double begin = 0, end = 0;  // virtual seconds from the step's start
};

// A hand-over between stages: activations up (forward) or their gradients down (backward).
struct ScaleHandoff {
  int from = 0, to = 0;
  bool backward = false;
  int microbatch = 0;
  double sent = 0, arrived = 0;  // the Send's begin and end
};

struct ScaleStep {
  int pp = 0, dp = 0, ep = 0, microbatches = 0;
  std::vector<ScaleSpan> spans;     // by rank, each rank's in time order
  std::vector<ScaleHandoff> handoffs;
  double pipeline_end = 0;          // last forward/backward span's end
  double step_end = 0;              // last op's end (gradient all-reduce and update included)
  std::vector<double> stage_idle;   // per stage: share of [0, pipeline_end) with no span, mean of its ranks
  double bubble = 0;                // mean of stage_idle
  double textbook = 0;              // (p-1)/(m+p-1)
  // Filled by the real run only.
  double loss = 0;
  int texts = 0, seq = 0;           // global batch and tokens per text
  int measured_runs = 0;            // steps whose fastest op costs were kept
  int stage_of(int rank) const { return rank / dp; }
  // The span of `rank` running at virtual time v, or null (waiting, or outside the pipeline).
  const ScaleSpan* span_at(int rank, double v) const;
};

// Reads spans, idle shares and ends from a plan and its timeline (no maths runs here).
ScaleStep read_scale_step(const trainer::Plan& plan, const trainer::Timeline& tl);

// Per-rank weights + gradients + optimizer bytes, from each rank's allocator.
struct RankBytes {
  int pp = 0, dp = 0, layers = 0, experts = 0;
  std::vector<std::int64_t> held;
  std::int64_t most() const;
};

// Starts the background job (once) and lets it go on as far as `upto`: the 16-rank bytes, the
// 64-rank bytes, or the step. The app asks for the step early (the chapters before it warm it
// up); a headless render asks only for what its picture needs.
enum class ScaleWork { Deeper = 1, Wider = 2, Step = 3 };
void start_scale_runs(ScaleWork upto = ScaleWork::Step);
// What is ready so far; null until then. Safe from any thread once non-null.
const RankBytes* deeper_bytes_ready();
const RankBytes* wider_bytes_ready();
const ScaleStep* scale_step_ready();
// Blocking versions (headless renders, tests): start the job if needed and wait.
const RankBytes& deeper_bytes();
const RankBytes& wider_bytes();
const ScaleStep& scale_step();
// A line for the status bar while the job runs (empty when done).
std::string scale_runs_activity();
// Why the job failed (empty unless it did).
std::string scale_runs_error();

}  // namespace onegpu::app
