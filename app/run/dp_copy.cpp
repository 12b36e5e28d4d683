#include "app/run/dp_copy.h"

#include <algorithm>
#include <cstring>

#include "app/run/posted.h"
#include "app/run/story_run.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/plan/plan.h"
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
  return o;
}

CopyFacts measure() {
  {
    StoryRun& run = StoryRun::get();
    TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
    ParallelTrainer t(story_model(), copy_options(), data);
    CopyFacts f;
    const ParamStore& a = t.params(0);
    const ParamStore& b = t.params(1);
    f.second_empty_before = std::all_of(b.master.data(), b.master.data() + b.count(), [](float v) { return v == 0.f; });
    t.begin_step(run.tray_batch());
    // Run the step by hand while the next op is a broadcast.
    while (true) {
      auto next = t.engine().waiting_ops();
      if (next.empty()) break;
      const Op& op = t.plan().op(next.front());
      if (op.kind != OpKind::Broadcast) break;
      f.layers.push_back(op.layer_begin);
      f.bytes += op.bytes;
      t.engine().step_one();
    }
    f.equal_after = a.count() == b.count() &&
                    std::memcmp(a.master.data(), b.master.data(), a.count() * sizeof(float)) == 0;
    t.finish_step();
    return f;
  }
}

PostedValue<CopyFacts>& posted() {
  StoryRun::get();  // first, so that it outlives the job (statics die in reverse order of creation)
  static PostedValue<CopyFacts> v;
  if (!v.posted()) v.post("data parallel: copying the model onto a second GPU", measure);
  return v;
}

}  // namespace

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
