#include "app/run/dp_drift.h"

#include <cmath>
#include <cstring>

#include "app/run/posted.h"
#include "app/run/story_run.h"
#include "app/run/recorded_run.h"
#include "trainer/train/dataset.h"

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

// Two one-rank runs stepped layer by layer, each on its own half of the trays and never
// averaging, recorded as events: each copy's gradient norms are its first step's LayerGradNorm
// probes. How far apart the two copies' weights are is not an event (no rank sees the other's
// weights): it is read from the two trainers' master weights after each step.
DriftFacts measure(int steps) {
  StoryRun& run = StoryRun::get();
  TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
  ModelConfig mc = model_preset("story");
  mc.vocab = static_cast<int>(run.tokenizer().vocab_size());
  ParallelOptions o;
  o.batch = 2;  // each copy takes half of the four texts
  o.workers = 1;
  o.broadcast_first_step = false;
  o.op_per_layer = true;
  DriftFacts f;
  std::vector<std::vector<float>> first;  // copy 1's weights before its steps and after each
  for (int k = 0; k < 2; ++k) {
    RecordedRun r = record_run(mc, o, data, half(run.tray_batch(), 2 * k), steps, [&](int step, const ParallelTrainer& t) {
      const ParamStore& P = t.params(0);
      std::vector<float> w(P.master.data(), P.master.data() + P.count());
      if (k == 0) {
        first.push_back(std::move(w));
        return;
      }
      const std::vector<float>& a = first[(std::size_t)(step + 1)];
      if (step < 0) {
        f.equal_before = a.size() == w.size() && std::memcmp(a.data(), w.data(), a.size() * sizeof(float)) == 0;
        return;
      }
      double diff = 0, norm = 0;
      for (std::size_t i = 0; i < a.size() && i < w.size(); ++i) {
        const double d = double(a[i]) - double(w[i]);
        diff += d * d;
        norm += double(a[i]) * double(a[i]);
      }
      f.rel_diff.push_back(std::sqrt(diff / norm));
    });
    f.grad_norm[k] = layer_grads(*r.state.find(0), mc.n_layers);
  }
  return f;
}

PostedValue<DriftFacts>& posted() {
  StoryRun::get();  // first, so that it outlives the job (statics die in reverse order of creation)
  static PostedValue<DriftFacts> v;
  if (!v.posted()) v.post("data parallel: two copies training alone", [] { return measure(3); });
  return v;
}

}  // namespace

std::vector<double> layer_grads(const RunStep& s, int layers) {
  std::vector<double> g((std::size_t)layers, 0.0);
  for (const ProbeValue& p : s.probes)
    if (p.kind == ProbeKind::LayerGradNorm && p.layer >= 0 && p.layer < layers) g[(std::size_t)p.layer] = p.value;
  return g;
}

const DriftFacts* story_drift_ready() { return posted().ready(); }
const DriftFacts& story_drift() { return posted().wait(); }
std::string story_drift_activity() { return posted_activity(posted()); }

}  // namespace onegpu::app
