#include "app/run/dp_step.h"

#include <algorithm>

#include "app/run/posted.h"
#include "app/run/step_reader.h"
#include "app/run/story_run.h"
#include "trainer/engine/virtual_clock.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/plan/plan.h"
#include "trainer/train/dataset.h"

namespace onegpu::app {

using namespace trainer;

namespace {

// A warm-up and three measured steps on the trays, replayed with each op's fastest measured
// cost (step_reader.h's fastest_of, the rule every timed chapter uses) and recorded as events;
// the facts are read from the recorded step of each run.
RecordedDpSteps measure() {
  StoryRun& run = StoryRun::get();
  TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
  ModelConfig m = model_preset("story");
  m.vocab = static_cast<int>(run.tokenizer().vocab_size());
  RecordedDpSteps out;
  for (int dp : {1, 2}) {
    ParallelOptions o;
    o.dp = dp;
    o.batch = 4;
    o.workers = 1;  // one op at a time: each op's measured cost is its own
    o.broadcast_first_step = false;  // the copy is the chapter before's business
    o.cost = CostModel::for_link("pcie");  // two GPUs in one workstation
    ParallelTrainer t(m, o, data);
    const FastestRuns f = fastest_of(t, 3, &run.tray_batch());
    // The first measured step's loss: the same step for both runs.
    RecordedStep r = record_step(recorded_run(t), f.timeline, f.losses.front(), f.runs);
    (dp == 1 ? out.one : out.two) = std::move(r.state);
    // Not an event: every copy's weights compared, after the four real updates.
    if (dp == 2) out.replicas_equal = t.replicas_agree();
  }
  out.facts = read_dp_step(*out.one.last_complete(), *out.two.last_complete());
  out.facts.replicas_equal = out.replicas_equal;
  return out;
}

}  // namespace

DpStepFacts read_dp_step(const RunStep& one, const RunStep& two) {
  DpStepFacts f;
  f.one_gpu_s = one.virtual_s;
  f.loss_one = one.loss;
  f.loss_two = two.loss;
  f.two_total_s = two.virtual_s;
  // GPU 1's step on the virtual clock: compute until its last backward, a wait for GPU 2 at the
  // all-reduce (their measured costs differ a little), the all-reduces, the update.
  double compute_end = 0.0, first_ar = -1.0;
  for (const OpSpan& op : two.ops) {
    if (op.rank != 0) continue;
    const double d = op.vend - op.vbegin;
    switch (op.kind) {
      case EventKind::AllReduce:
        f.two_allreduce_s += d;
        first_ar = first_ar < 0 ? op.vbegin : std::min(first_ar, op.vbegin);
        ++f.allreduce_ops;
        break;
      case EventKind::Update: f.two_update_s += d; break;
      case EventKind::Forward:
      case EventKind::Backward:
      case EventKind::WeightGradient: compute_end = std::max(compute_end, op.vend); break;
      default: break;
    }
  }
  f.two_compute_s = compute_end;
  f.two_wait_s = first_ar > compute_end ? first_ar - compute_end : 0.0;
  return f;
}

namespace {

PostedValue<RecordedDpSteps>& posted() {
  StoryRun::get();  // first, so that it outlives the job (statics die in reverse order of creation)
  static PostedValue<RecordedDpSteps> v;
  if (!v.posted()) v.post("data parallel: measuring a step on one GPU and on two", measure);
  return v;
}

}  // namespace

const DpStepFacts* story_dp_step_ready() {
  const RecordedDpSteps* r = posted().ready();
  return r ? &r->facts : nullptr;
}
const DpStepFacts& story_dp_step() { return posted().wait().facts; }
const RecordedDpSteps& story_dp_steps() { return posted().wait(); }
std::string story_dp_step_activity() { return posted_activity(posted()); }

}  // namespace onegpu::app
