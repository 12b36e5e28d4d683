#include "app/run/pipeline_step.h"

#include <string>

#include "app/live/job_runner.h"
#include "app/run/model_memory.h"
#include "app/run/posted.h"
#include "app/run/story_run.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/train/dataset.h"

namespace onegpu::app {

using namespace trainer;

namespace {

ParallelOptions pipeline_options(int microbatches) {
  ParallelOptions o;
  o.pp = 2;
  o.dp = 2;
  o.ep = 2;
  o.microbatches = microbatches;
  // 1F1B needs a microbatch per stage; with one microbatch it would be GPipe's order anyway.
  o.schedule = microbatches >= o.pp ? Schedule::OneFOneB : Schedule::GPipe;
  o.batch = 8;
  o.workers = 1;  // one op at a time: each op's measured cost is its own
  o.broadcast_first_step = false;
  return o;
}

ModelConfig story8(const StoryRun& run) {
  ModelConfig m = model_preset("story8");
  m.vocab = static_cast<int>(run.tokenizer().vocab_size());
  return m;
}

}  // namespace

namespace {

// The fastest-of-N replay's events go into the recorded run's state; the chapters read the step
// from there. Its loss is the first measured step's (the weights move every step).
RecordedStep measure(int microbatches) {
  StoryRun& run = StoryRun::get();
  TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
  ParallelTrainer t(story8(run), pipeline_options(microbatches), data);
  const FastestRuns f = fastest_of(t, kMeasuredSteps);
  return record_step(recorded_run(t), f.timeline, f.losses.front(), f.runs);
}

std::vector<std::int64_t> held_after_build() {
  StoryRun& run = StoryRun::get();
  TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
  ParallelTrainer t(story8(run), pipeline_options(1), data);
  return held_bytes_per_rank(t);
}

struct PipelineRuns {
  PostedValue<std::vector<std::int64_t>> held;
  PostedValue<RecordedStep> steps[3];  // 1, 2 and 4 microbatches
};

PipelineRuns& runs() {
  StoryRun::get();  // first, so that it outlives the jobs (statics die in reverse order of creation)
  static PipelineRuns r;
  return r;
}

PostedValue<RecordedStep>& posted_step(int microbatches) {
  if (microbatches != 1 && microbatches != 2 && microbatches != 4)
    throw Error("pipeline chapters run 1, 2 or 4 microbatches, not " + std::to_string(microbatches));
  PostedValue<RecordedStep>& p = runs().steps[microbatches == 1 ? 0 : microbatches == 2 ? 1 : 2];
  if (!p.posted())
    p.post("pipeline run: measuring the step with " + std::to_string(microbatches) +
               (microbatches == 1 ? " microbatch" : " microbatches"),
           [microbatches] { return measure(microbatches); });
  return p;
}

PostedValue<std::vector<std::int64_t>>& posted_held() {
  PostedValue<std::vector<std::int64_t>>& p = runs().held;
  if (!p.posted()) p.post("pipeline run: building the 4-rank model", held_after_build);
  return p;
}

}  // namespace

const PipelineStep* story_pipeline_step_ready(int microbatches) {
  const RecordedStep* r = posted_step(microbatches).ready();
  return r ? &r->step : nullptr;
}
const PipelineStep& story_pipeline_step(int microbatches) { return posted_step(microbatches).wait().step; }
const RunState& story_pipeline_run_state(int microbatches) { return posted_step(microbatches).wait().state; }

void warm_story_pipeline_steps() {
  posted_held();
  for (int m : {1, 2, 4}) posted_step(m);
}

const std::vector<std::int64_t>* story_pipeline_held_bytes_ready() { return posted_held().ready(); }
const std::vector<std::int64_t>& story_pipeline_held_bytes() { return posted_held().wait(); }

std::string story_pipeline_activity() {
  PipelineRuns& r = runs();
  const std::string now = JobRunner::shared().status().job;
  auto line = [&](const auto& p) -> std::string {
    if (!p.error().empty()) return p.what() + " failed: " + p.error();
    if (!p.pending()) return {};
    return now == p.what() ? now : p.what() + " (queued)";
  };
  if (std::string l = line(r.held); !l.empty()) return l;
  for (const auto& p : r.steps)
    if (std::string l = line(p); !l.empty()) return l;
  return {};
}

}  // namespace onegpu::app
