#pragma once
// The runs behind chapters 24-26 (deeper, wider, one step on 64 GPUs):
//   deeper  the story model grown to 32 layers, split into 8 stages of 2 GPUs (pp=8, dp=2,
//           ep=2): 16 ranks, of which we read each rank's allocator after it is built;
//   wider   the `scale` preset (32 layers, 64 experts, top-2) on 8 stages of 8 GPUs (pp=8,
//           dp=8, ep=8): 64 ranks, allocator bytes again;
//   step    one real 1F1B training step of that 64-rank run, 8 microbatches per first-stage GPU.
// The step is the fastest of three measured runs (fastest_of()), replayed, its events fed into
// the recorded run's RunState and read back from its RunStep (record_step(), read_step() in
// app/run/step_reader.h); its loss is the last measured step's.
// Each of the three is a job on the app's job runner (the 64-rank run takes seconds): the
// chapters ask what is ready and show progress until it is.
#include <cstdint>
#include <string>
#include <vector>

#include "app/run/step_reader.h"

namespace onegpu::app {

// Per-rank weights + gradients + optimizer bytes, from each rank's allocator.
struct RankBytes {
  int pp = 0, dp = 0, layers = 0, experts = 0;
  std::vector<std::int64_t> held;
  std::int64_t most() const;
};

// Queues the jobs (each once, in order) as far as `upto`: the 16-rank bytes, the 64-rank bytes,
// the step. The app asks for the step early (the chapters before it warm it up); a headless
// render asks only for what its picture needs.
enum class ScaleWork { Deeper = 1, Wider = 2, Step = 3 };
void start_scale_runs(ScaleWork upto = ScaleWork::Step);
// What is ready so far; null until then. Safe from any thread once non-null.
const RankBytes* deeper_bytes_ready();
const RankBytes* wider_bytes_ready();
const PipelineStep* scale_step_ready();
// Blocking versions (headless renders, tests): queue the jobs if needed and wait; Error if one
// failed. Never from a job (see app/run/posted.h).
const RankBytes& deeper_bytes();
const RankBytes& wider_bytes();
const PipelineStep& scale_step();
// A line for the status bar while one of the jobs is queued or runs (empty when done).
std::string scale_runs_activity();
// Why a job failed (empty unless one did).
std::string scale_runs_error();

}  // namespace onegpu::app
