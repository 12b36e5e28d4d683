#include "app/run/dp_step.h"

#include <algorithm>

#include "app/run/posted.h"
#include "app/run/recorded_run.h"
#include "app/run/story_run.h"
#include "trainer/engine/virtual_clock.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/plan/plan.h"
#include "trainer/train/dataset.h"

namespace onegpu::app {

using namespace trainer;

namespace {

// Four steps on the trays (a warm-up, then three measured), recorded as events; the facts are
// read from the fastest measured step of each run.
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
    o.workers = 1;
    o.broadcast_first_step = false;  // the copy is the chapter before's business
    o.cost = CostModel::for_link("pcie");  // two GPUs in one workstation
    bool agree = false;
    RecordedRun r = record_run(m, o, data, run.tray_batch(), 4, [&](int step, const ParallelTrainer& t) {
      if (step == 3) agree = t.replicas_agree();  // not an event: every copy's weights compared
    });
    (dp == 1 ? out.one : out.two) = std::move(r.state);
    if (dp == 2) out.replicas_equal = agree;
  }
  out.facts = read_dp_step(fastest_step(out.one, 1, 3), fastest_step(out.two, 1, 3));
  out.facts.loss_one = out.one.find(1)->loss;  // the first measured step: the same for both runs
  out.facts.loss_two = out.two.find(1)->loss;
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
