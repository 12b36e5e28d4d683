#include "app/run/ep_traffic.h"

#include "app/run/posted.h"
#include "app/run/story_run.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/train/dataset.h"
#include "trainer/train/probes.h"

namespace onegpu::app {

using namespace trainer;

namespace {

Traffic measure() {
  {
    StoryRun& run = StoryRun::get();
    const std::unique_ptr<Trainer> fresh = run.fresh_model();  // the first step's fresh model, a copy of our own
    Model& m = fresh->model();
    const Batch& b = run.tray_batch();
    const int L = m.config().n_layers, E = m.config().n_experts, half = E / 2;
    Traffic t;
    for (int g = 0; g < 2; ++g) t.crossing[g].assign(L, 0);
    for (int text = 0; text < 4; ++text) {
      const int g = text / 2;  // GPU 1 reads texts 1-2, GPU 2 texts 3-4
      std::vector<std::int32_t> ids(b.inputs.begin() + static_cast<long>(text) * b.S,
                                    b.inputs.begin() + static_cast<long>(text + 1) * b.S);
      for (int l = 0; l < L; ++l) {
        for (const auto& c : router_choices(m, ids, l)) {
          for (auto e : c.experts) {
            bool away = g == 0 ? e >= half : e < half;
            t.crossing[g][l] += away;
            if (away && g == 0 && l == 0 && t.example_expert < 0) {
              t.example_token = run.tokenizer().token_text(c.token);
              t.example_expert = e;
            }
          }
          if (l == 0 && g == 0) t.pairs_per_gpu += static_cast<int>(c.experts.size());
        }
      }
    }
    // The same step on the engine, experts split over two ranks: what its all-to-all moved.
    TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
    ModelConfig mc = model_preset("story");
    mc.vocab = static_cast<int>(run.tokenizer().vocab_size());
    ParallelOptions o;
    o.dp = 2;
    o.ep = 2;
    o.batch = 4;
    o.workers = 1;
    o.broadcast_first_step = false;
    ParallelTrainer pt(mc, o, data);
    pt.step(b);
    for (int g = 0; g < 2; ++g) {
      auto rows = pt.rows_sent_away(g);
      t.moved[g].assign(rows.begin(), rows.end());
    }
    return t;
  }
}

PostedValue<Traffic>& posted() {
  StoryRun::get();  // first, so that it outlives the job (statics die in reverse order of creation)
  static PostedValue<Traffic> v;
  if (!v.posted()) v.post("expert parallel: counting the router's choices", measure);
  return v;
}

}  // namespace

const Traffic* story_expert_traffic_ready() { return posted().ready(); }
const Traffic& story_expert_traffic() { return posted().wait(); }
std::string story_expert_traffic_activity() { return posted_activity(posted()); }

}  // namespace onegpu::app
