#include "app/run/dp_copy.h"

#include <algorithm>
#include <cstring>

#include "app/run/story_run.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/plan/plan.h"
#include "trainer/train/dataset.h"

namespace onegpu::app {

using namespace trainer;

const CopyFacts& story_model_copy() {
  static const CopyFacts facts = [] {
    StoryRun& run = StoryRun::get();
    TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
    ModelConfig m = model_preset("story");
    m.vocab = static_cast<int>(run.tokenizer().vocab_size());
    ParallelOptions o;
    o.dp = 2;
    o.batch = 4;
    o.workers = 1;
    o.broadcast_first_step = true;
    ParallelTrainer t(m, o, data);
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
  }();
  return facts;
}

}  // namespace onegpu::app
