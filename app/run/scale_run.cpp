#include "app/run/scale_run.h"

#include <algorithm>
#include <memory>

#include "app/live/job_runner.h"
#include "app/run/model_memory.h"
#include "app/run/posted.h"
#include "app/run/story_run.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/train/dataset.h"

namespace onegpu::app {

using namespace trainer;

std::int64_t RankBytes::most() const { return held.empty() ? 0 : *std::max_element(held.begin(), held.end()); }

namespace {

constexpr int kRuns = 3;

RankBytes bytes_of(const ParallelTrainer& t) {
  RankBytes b;
  b.pp = t.options().pp;
  b.dp = t.options().dp;
  b.layers = t.model_config().n_layers;
  b.experts = t.model_config().n_experts;
  b.held = held_bytes_per_rank(t);
  return b;
}

// The 64-rank run's options: 8 stages of 8 GPUs, one text per microbatch.
ParallelOptions wide_options() {
  ParallelOptions o;
  o.pp = 8, o.dp = 8, o.ep = 8;
  o.microbatches = 8;
  o.schedule = Schedule::OneFOneB;
  o.batch = 64;   // one text per microbatch: 8 first-stage GPUs × 8 microbatches
  o.seq_len = 8;  // short texts keep the step to seconds on two cores
  o.workers = 1;  // one op at a time: each op's measured cost is its own
  o.broadcast_first_step = false;
  return o;
}

const char* const kDeeperJob = "64-GPU run: building the 32-layer model on 16 ranks";
const char* const kWiderJob = "64-GPU run: building the scale model on 64 ranks";
const char* const kStepJob = "64-GPU run: a warm-up and 3 measured steps on 64 ranks";
static_assert(kRuns == 3, "kStepJob names the number of measured steps");

struct ScaleRuns {
  // The runner's thread only (its jobs run one after another): the corpus sliver and the 64-rank
  // run, kept from the job that reads its bytes to the one that measures its step. Declared
  // before the values, so the jobs that use them are finished before they go.
  std::unique_ptr<TokenDataset> data;
  std::unique_ptr<ParallelTrainer> wide;
  PostedValue<RankBytes> deeper, wider;
  PostedValue<RecordedStep> step;

  const TokenDataset& dataset() {
    if (!data) {
      StoryRun& run = StoryRun::get();
      data = std::make_unique<TokenDataset>(TokenDataset::build(run.tokenizer(), run.sliver().train));
    }
    return *data;
  }
  static int vocab() { return static_cast<int>(StoryRun::get().tokenizer().vocab_size()); }

  RankBytes build_deeper() {
    ModelConfig m = model_preset("story");
    m.n_layers = 32;
    m.vocab = vocab();
    ParallelOptions o;
    o.pp = 8, o.dp = 2, o.ep = 2, o.batch = 16, o.microbatches = 8, o.seq_len = 8, o.workers = 1;
    ParallelTrainer t(m, o, dataset());
    return bytes_of(t);
  }
  ParallelTrainer& build_wide() {
    if (!wide) {
      ModelConfig m = model_preset("scale");
      m.vocab = vocab();
      wide = std::make_unique<ParallelTrainer>(m, wide_options(), dataset());
    }
    return *wide;
  }
  // The replay's events feed the recorded run's RunState; the step is read from its record.
  RecordedStep measure_step() {
    ParallelTrainer& t = build_wide();
    const FastestRuns f = fastest_of(t, kRuns);
    RecordedStep r = record_step(recorded_run(t), f.timeline, f.losses.back(), f.runs);  // the last measured step's loss
    wide.reset();  // 64 ranks' weights are not kept once the step is recorded
    return r;
  }
};

ScaleRuns& runs() {
  StoryRun::get();  // first, so that it outlives the jobs (statics die in reverse order of creation)
  static ScaleRuns r;
  return r;
}

}  // namespace

void start_scale_runs(ScaleWork upto) {
  ScaleRuns& r = runs();
  // Queued in order, so each finds what the one before built.
  if (!r.deeper.posted()) r.deeper.post(kDeeperJob, [&r] { return r.build_deeper(); });
  if (upto >= ScaleWork::Wider && !r.wider.posted())
    r.wider.post(kWiderJob, [&r] { return bytes_of(r.build_wide()); });
  if (upto >= ScaleWork::Step && !r.step.posted()) r.step.post(kStepJob, [&r] { return r.measure_step(); });
}

const RankBytes* deeper_bytes_ready() { return runs().deeper.ready(); }
const RankBytes* wider_bytes_ready() { return runs().wider.ready(); }
const PipelineStep* scale_step_ready() {
  const RecordedStep* r = runs().step.ready();
  return r ? &r->step : nullptr;
}

const RankBytes& deeper_bytes() {
  start_scale_runs(ScaleWork::Deeper);
  return runs().deeper.wait();
}
const RankBytes& wider_bytes() {
  start_scale_runs(ScaleWork::Wider);
  return runs().wider.wait();
}
const PipelineStep& scale_step() {
  start_scale_runs(ScaleWork::Step);
  return runs().step.wait().step;
}

std::string scale_runs_activity() {
  ScaleRuns& r = runs();
  const std::string now = JobRunner::shared().status().job;
  for (const std::string& w : {r.deeper.what(), r.wider.what(), r.step.what()})
    if (!w.empty() && w == now) return now;
  if (r.deeper.pending() || r.wider.pending() || r.step.pending())
    return now.empty() ? "64-GPU run: queued" : "64-GPU run: queued behind " + now;
  return {};
}

std::string scale_runs_error() {
  ScaleRuns& r = runs();
  for (std::string e : {r.deeper.error(), r.wider.error(), r.step.error()})
    if (!e.empty()) return "the 64-GPU run failed: " + e;
  return {};
}

}  // namespace onegpu::app
