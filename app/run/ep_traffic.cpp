#include "app/run/ep_traffic.h"

#include "app/run/posted.h"
#include "app/run/recorded_run.h"
#include "app/run/story_run.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/train/dataset.h"
#include "trainer/train/probes.h"

namespace onegpu::app {

using namespace trainer;

namespace {

// The first step with the experts split over two ranks (dp=2, ep=2), recorded as events: the
// all-to-all rows and the routers' counts are read from its step record. The one example token
// is not an event (the events count rows, not which token went where): the router's choice on
// GPU 1's first text is asked of a fresh model for it.
Traffic measure() {
  StoryRun& run = StoryRun::get();
  const Batch& b = run.tray_batch();
  TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
  ModelConfig mc = model_preset("story");
  mc.vocab = static_cast<int>(run.tokenizer().vocab_size());
  ParallelOptions o;
  o.dp = 2;
  o.ep = 2;
  o.batch = 4;
  o.workers = 1;
  o.broadcast_first_step = false;
  RecordedRun r = record_run(mc, o, data, b, 1);
  const RunStep* s = r.state.find(0);
  if (!s || !s->complete) throw Error("expert traffic: the step was not recorded");
  Traffic t = read_traffic(*s, mc.n_layers, mc.n_experts);
  const std::unique_ptr<Trainer> fresh = run.fresh_model();
  std::vector<std::int32_t> ids(b.inputs.begin(), b.inputs.begin() + b.S);
  for (const auto& c : router_choices(fresh->model(), ids, 0))
    for (auto e : c.experts)
      if (e >= mc.n_experts / 2 && t.example_expert < 0) {
        t.example_token = run.tokenizer().token_text(c.token);
        t.example_expert = e;
      }
  return t;
}

PostedValue<Traffic>& posted() {
  StoryRun::get();  // first, so that it outlives the job (statics die in reverse order of creation)
  static PostedValue<Traffic> v;
  if (!v.posted()) v.post("expert parallel: counting the router's choices", measure);
  return v;
}

}  // namespace

Traffic read_traffic(const RunStep& s, int layers, int experts) {
  Traffic t;
  for (int g = 0; g < 2; ++g) {
    t.crossing[g].assign((std::size_t)layers, 0);
    t.moved[g].assign((std::size_t)layers, 0);
  }
  for (const TrafficRow& row : s.traffic) {
    if (row.from == row.to || row.from < 0 || row.from > 1 || row.layer < 0 || row.layer >= layers) continue;
    t.moved[row.from][(std::size_t)row.layer] += row.rows;
  }
  for (int g = 0; g < 2; ++g)
    for (int l = 0; l < layers; ++l) t.crossing[g][(std::size_t)l] = static_cast<int>(t.moved[g][(std::size_t)l]);
  // Every token-expert pair of layer 1, over both GPUs' texts: half of them are one GPU's.
  std::int64_t pairs = 0;
  for (int e = 0; e < experts && e < (int)s.router.size(); ++e) pairs += s.router[(std::size_t)e];
  t.pairs_per_gpu = static_cast<int>(pairs / 2);
  return t;
}

const Traffic* story_expert_traffic_ready() { return posted().ready(); }
const Traffic& story_expert_traffic() { return posted().wait(); }
std::string story_expert_traffic_activity() { return posted_activity(posted()); }

}  // namespace onegpu::app
