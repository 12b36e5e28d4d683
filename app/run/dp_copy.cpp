#include "app/run/dp_copy.h"

#include <algorithm>
#include <cstring>

#include "app/run/posted.h"
#include "app/run/recorded_run.h"
#include "app/run/story_run.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/plan/plan.h"
#include "trainer/error.h"
#include "trainer/train/dataset.h"

namespace onegpu::app {

using namespace trainer;

namespace {

ModelConfig story_model() {
  ModelConfig m = model_preset("story");
  m.vocab = static_cast<int>(StoryRun::get().tokenizer().vocab_size());
  return m;
}

ParallelOptions copy_options() {
  ParallelOptions o;
  o.dp = 2;
  o.batch = 4;
  o.workers = 1;
  o.broadcast_first_step = true;
  o.separate_first_copy = true;  // GPU 2 empty, then filled by the broadcasts themselves
  return o;
}

// The first step of a dp=2 run, recorded as events: its broadcasts are rank 0's Broadcast spans,
// in the order they ran. Whether GPU 2 was empty before and matches GPU 1 after are not events:
// the trainer's stores are read for those.
CopyFacts measure() {
  StoryRun& run = StoryRun::get();
  TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
  bool empty_before = false, equal_after = false;
  RecordedRun r = record_run(story_model(), copy_options(), data, run.tray_batch(), 1, [&](int step, const ParallelTrainer& t) {
    const ParamStore& b = t.params(1);
    if (step == -1)
      empty_before = std::all_of(b.master.data(), b.master.data() + b.count(), [](float v) { return v == 0.f; });
    else
      equal_after = t.replicas_agree();  // a wrong copy would not match after the shared update
  });
  const RunStep* s = r.state.find(0);
  if (!s || !s->complete) throw Error("model copy: the first step was not recorded");
  CopyFacts f = read_copy(*s);
  f.second_empty_before = empty_before;
  f.equal_after = equal_after;
  return f;
}

PostedValue<CopyFacts>& posted() {
  StoryRun::get();  // first, so that it outlives the job (statics die in reverse order of creation)
  static PostedValue<CopyFacts> v;
  if (!v.posted()) v.post("data parallel: copying the model onto a second GPU", measure);
  return v;
}

}  // namespace

CopyFacts read_copy(const RunStep& first) {
  CopyFacts f;
  for (const OpSpan& op : first.ops) {
    if (op.kind != EventKind::Broadcast || op.rank != 0) continue;
    f.layers.push_back(op.layer);
    f.bytes += op.bytes;
  }
  return f;
}

const CopyFacts* story_model_copy_ready() { return posted().ready(); }
const CopyFacts& story_model_copy() { return posted().wait(); }
std::string story_model_copy_activity() { return posted_activity(posted()); }

int story_model_copy_broadcasts() {
  static const int n = [] {
    const Plan plan = compile_plan(parallel_run_config(story_model(), copy_options()), PlanOptions{.broadcast_model = true});
    int count = 0;
    for (const Collective& c : plan.collectives) count += c.kind == OpKind::Broadcast;
    return count;
  }();
  return n;
}

}  // namespace onegpu::app
