#include "app/run/pipeline_step.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "app/run/model_memory.h"
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

const std::vector<std::int64_t>& story_pipeline_held_bytes() {
  static const std::vector<std::int64_t> bytes = [] {
    StoryRun& run = StoryRun::get();
    TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
    ParallelTrainer t(story8(run), pipeline_options(1), data);
    return held_bytes_per_rank(t);
  }();
  return bytes;
}

namespace {
struct StepSlot {
  std::mutex mu;  // held while the step is measured: a second caller waits instead of rerunning it
  bool done = false;
  PipelineStep step;
};
StepSlot& slot(int microbatches) {
  static StepSlot slots[5];
  return slots[microbatches];
}
}  // namespace

const PipelineStep& story_pipeline_step(int microbatches) {
  if (microbatches != 1 && microbatches != 2 && microbatches != 4)
    throw Error("pipeline chapters run 1, 2 or 4 microbatches, not " + std::to_string(microbatches));
  StepSlot& sl = slot(microbatches);
  std::lock_guard<std::mutex> lock(sl.mu);
  if (!sl.done) {
    StoryRun& run = StoryRun::get();
    TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
    ParallelTrainer t(story8(run), pipeline_options(microbatches), data);
    const FastestRuns f = fastest_of(t, kMeasuredSteps);
    PipelineStep best = read_step(t.plan(), f.timeline);
    best.loss = f.losses.front();  // the first measured step's (the weights move every step)
    best.measured_runs = f.runs;
    sl.step = std::move(best);
    sl.done = true;
  }
  return sl.step;
}

void warm_story_pipeline_steps() {
  // StoryRun first, so that it outlives the warmer (statics die in reverse order of creation).
  StoryRun::get();
  struct Warmer {
    std::thread thread;
    std::atomic<bool> stop{false};
    ~Warmer() {
      stop = true;
      if (thread.joinable()) thread.join();  // at most the step being measured
    }
  };
  static Warmer w;
  if (w.thread.joinable()) return;
  w.thread = std::thread([] {
    for (int m : {1, 2, 4}) {
      if (w.stop) return;
      try {
        story_pipeline_step(m);
      } catch (const std::exception&) {
        return;  // the chapter's own call reports it
      }
    }
  });
}

}  // namespace onegpu::app
