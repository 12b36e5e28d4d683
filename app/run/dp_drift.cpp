#include "app/run/dp_drift.h"

#include <cmath>
#include <cstring>

#include "app/run/posted.h"
#include "app/run/story_run.h"
#include "trainer/train/probes.h"
#include "trainer/train/step_runner.h"

namespace onegpu::app {

using namespace trainer;

namespace {

// Texts [first, first + 2) of the trays' batch.
Batch half(const Batch& full, int first) {
  Batch b;
  b.B = 2;
  b.S = full.S;
  auto at = [&](const std::vector<std::int32_t>& v) {
    return std::vector<std::int32_t>(v.begin() + static_cast<long>(first) * full.S,
                                     v.begin() + static_cast<long>(first + 2) * full.S);
  };
  b.inputs = at(full.inputs);
  b.targets = at(full.targets);
  return b;
}

DriftFacts measure(int steps) {
  {
    StoryRun& run = StoryRun::get();
    TrainOptions o;
    o.steps = 1000;
    o.batch = 2;  // each copy takes half of the four texts
    o.seed = 1;
    std::unique_ptr<Trainer> copy[2];
    for (auto& c : copy) c = std::make_unique<Trainer>(model_preset("story"), o, run.tokenizer(), run.sliver());
    DriftFacts f;
    const ParamStore& a = copy[0]->model().params();
    const ParamStore& b = copy[1]->model().params();
    f.equal_before = std::memcmp(a.master.data(), b.master.data(), a.count() * sizeof(float)) == 0;
    for (int s = 0; s < steps; ++s) {
      for (int k = 0; k < 2; ++k) {
        StepRunner r(*copy[k], half(run.tray_batch(), 2 * k));
        while (r.peek().kind != PieceKind::Update) r.run_next();
        if (s == 0) f.grad_norm[k] = layer_grad_norms(copy[k]->model()).layers;
        r.run_next();  // each updates with its own gradients only
      }
      double diff = 0, norm = 0;
      for (std::int64_t i = 0; i < a.count(); ++i) {
        double d = double(a.master.data()[i]) - double(b.master.data()[i]);
        diff += d * d;
        norm += double(a.master.data()[i]) * double(a.master.data()[i]);
      }
      f.rel_diff.push_back(std::sqrt(diff / norm));
    }
    return f;
  }
}

PostedValue<DriftFacts>& posted() {
  StoryRun::get();  // first, so that it outlives the job (statics die in reverse order of creation)
  static PostedValue<DriftFacts> v;
  if (!v.posted()) v.post("data parallel: two copies training alone", [] { return measure(3); });
  return v;
}

}  // namespace

const DriftFacts* story_drift_ready() { return posted().ready(); }
const DriftFacts& story_drift() { return posted().wait(); }
std::string story_drift_activity() { return posted_activity(posted()); }

}  // namespace onegpu::app
