#include "app/run/model_memory.h"

#include <cmath>

#include "app/run/posted.h"
#include "app/run/recorded_run.h"
#include "app/run/story_run.h"
#include "trainer/memory/tracker.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/train/dataset.h"
#include "trainer/model/config.h"
#include "trainer/model/params.h"

namespace onegpu::app {

std::int64_t held_bytes(const trainer::MemoryTracker& t) {
  return t.current(trainer::MemCategory::Weights) + t.current(trainer::MemCategory::Gradients) +
         t.current(trainer::MemCategory::Optimizer);
}

std::int64_t held_bytes(const RankMemory& m) {
  using trainer::MemCategory;
  return m.current[(int)MemCategory::Weights] + m.current[(int)MemCategory::Gradients] +
         m.current[(int)MemCategory::Optimizer];
}

std::vector<std::int64_t> held_bytes_per_rank(const trainer::ParallelTrainer& t) {
  std::vector<std::int64_t> b;
  for (int r = 0; r < t.world(); ++r) b.push_back(held_bytes(t.tracker(r)));
  return b;
}

const std::vector<ModelBytes>& story_model_bytes(int max_layers) {
  static std::vector<ModelBytes> cache;
  while (static_cast<int>(cache.size()) < max_layers) {
    trainer::ModelConfig c = trainer::model_preset("story");
    c.n_layers = static_cast<int>(cache.size()) + 1;
    trainer::MemoryTracker t;
    trainer::ParamStore store(c, t);
    ModelBytes b;
    b.layers = c.n_layers;
    b.params = store.count();
    b.weights = t.current(trainer::MemCategory::Weights);
    b.gradients = t.current(trainer::MemCategory::Gradients);
    b.optimizer = t.current(trainer::MemCategory::Optimizer);
    cache.push_back(b);
  }
  return cache;
}

namespace {

// Two dp=2 runs recorded before their first step: what rank 0 holds is its resident memory, as
// the run state has it from the runs' StepMemory events.
SplitBytes measure_split() {
  StoryRun& run = StoryRun::get();
  trainer::TokenDataset data = trainer::TokenDataset::build(run.tokenizer(), run.sliver().train);
  trainer::ModelConfig m = trainer::model_preset("story");
  m.vocab = static_cast<int>(run.tokenizer().vocab_size());
  SplitBytes b;
  for (int ep : {1, 2}) {
    trainer::ParallelOptions o;
    o.dp = 2;
    o.ep = ep;
    o.batch = 4;
    o.workers = 1;
    const RecordedRun r = record_run(m, o, data, run.tray_batch(), 0);
    (ep == 1 ? b.replicated : b.split) = held_bytes(r.state.resident().at(0));
  }
  return b;
}

PostedValue<SplitBytes>& posted_split() {
  StoryRun::get();  // first, so that it outlives the job (statics die in reverse order of creation)
  static PostedValue<SplitBytes> v;
  if (!v.posted()) v.post("expert parallel: building the two-GPU runs", measure_split);
  return v;
}

}  // namespace

const SplitBytes* story_expert_split_bytes_ready() { return posted_split().ready(); }
const SplitBytes& story_expert_split_bytes() { return posted_split().wait(); }
std::string story_expert_split_bytes_activity() { return posted_activity(posted_split()); }

std::int64_t toy_capacity_bytes() {
  const double four = static_cast<double>(story_model_bytes(4)[3].total());
  const double mib = 1024.0 * 1024.0;
  // Just under the top tick: the 4-layer model fills 85–95% of it.
  return static_cast<std::int64_t>(std::ceil(four / 0.95 / mib) * mib);
}

}  // namespace onegpu::app
