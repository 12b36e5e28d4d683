#include "app/run/first_step.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "app/run/recorded_run.h"
#include "app/run/posted.h"
#include "app/run/step_reader.h"
#include "app/run/story_run.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/train/dataset.h"

namespace onegpu::app {

using namespace trainer;

namespace {

constexpr int kLoupeLayer = 1;  // layer 2, as the chapters count

// The positions of the loupe's sixteen weights: bin centres of the layer's block.
std::array<float, 16> loupe(const ParamStore& P) {
  std::array<float, 16> w{};
  const std::int64_t n = P.layer_layout().size;
  for (int i = 0; i < 16; ++i) w[(std::size_t)i] = P.master.data()[P.layer_offset(kLoupeLayer) + (2 * i + 1) * n / 32];
  return w;
}

ModelConfig story_model() {
  ModelConfig m = model_preset("story");
  m.vocab = static_cast<int>(StoryRun::get().tokenizer().vocab_size());
  return m;
}

// Where "Once upon a" ends in the first tray's text: the head's probes look there.
int prompt_end() {
  StoryRun& story = StoryRun::get();
  const std::vector<std::int32_t> prompt = story.tokenizer().encode(kPrompt);
  const Batch& b = story.tray_batch();
  if (prompt.empty() || (int)prompt.size() > b.S || !std::equal(prompt.begin(), prompt.end(), b.inputs.begin()))
    throw Error("first step: the first tray does not open with the prompt");
  return static_cast<int>(prompt.size()) - 1;
}

ParallelOptions one_rank(int microbatches) {
  ParallelOptions o;
  o.microbatches = microbatches;
  o.batch = 4;
  o.workers = 1;  // one op at a time: they finish in the order they ran, each cost its own
  o.broadcast_first_step = false;
  o.op_per_layer = true;
  return o;
}

FirstStepRun record(int microbatches) {
  StoryRun& story = StoryRun::get();
  const ModelConfig mc = story_model();
  ParallelOptions o = one_rank(microbatches);
  o.probe_position = prompt_end();
  o.probe_top = 8;
  const TokenDataset data = TokenDataset::build(story.tokenizer(), story.sliver().train);
  FirstStepRun r;
  r.microbatches = microbatches;
  // Two steps on the trays: the first step, then the same texts again, whose head's probes are
  // the guess with the updated weights. Around the first, the loupe's weights (not events).
  RecordedRun rec = record_run(mc, o, data, story.tray_batch(), 2, [&](int step, const ParallelTrainer& t) {
    if (step == -1) r.loupe_before = loupe(t.params(0));
    if (step == 0) r.loupe_after = loupe(t.params(0));
  });
  r.run = rec.run;
  r.state = std::move(rec.state);
  return r;
}

RunState measure_warm() {
  StoryRun& story = StoryRun::get();
  const TokenDataset data = TokenDataset::build(story.tokenizer(), story.sliver().train);
  ParallelTrainer t(story_model(), one_rank(4), data);
  const FastestRuns f = fastest_of(t, 3);
  return std::move(record_step(recorded_run(t), f.timeline, f.losses.front(), f.runs).state);
}

struct Recordings {
  std::mutex mu;
  std::map<int, std::unique_ptr<PostedValue<FirstStepRun>>> first;
  PostedValue<RunState> warm;
};
Recordings& recordings() {
  StoryRun::get();  // first, so that it outlives the jobs (statics die in reverse order of creation)
  static Recordings r;
  return r;
}

PostedValue<FirstStepRun>& posted_first(int microbatches) {
  Recordings& R = recordings();
  std::lock_guard<std::mutex> lock(R.mu);
  auto& p = R.first[microbatches];
  if (!p) {
    p = std::make_unique<PostedValue<FirstStepRun>>();
    p->post("the first step: recording its events (" + std::to_string(microbatches) +
                (microbatches == 1 ? " microbatch)" : " microbatches)"),
            [microbatches] { return record(microbatches); });
  }
  return *p;
}

PostedValue<RunState>& posted_warm() {
  Recordings& R = recordings();
  std::lock_guard<std::mutex> lock(R.mu);
  R.warm.post("timing a warm step (4 microbatches)", [] { return measure_warm(); });
  return R.warm;
}

}  // namespace

const RunStep& FirstStepRun::first() const {
  const RunStep* s = state.find(0);
  if (!s || !s->complete) throw Error("first step: not recorded");
  return *s;
}

const RunStep& FirstStepRun::second() const {
  const RunStep* s = state.find(1);
  if (!s || !s->complete) throw Error("first step: the step after it was not recorded");
  return *s;
}

double HeadGuess::error() const { return -std::log(std::max(p_target, 1e-30)); }

HeadGuess head_guess(const RunStep& s, int microbatch) {
  HeadGuess g;
  for (const ProbeValue& p : s.probes) {
    if (microbatch >= 0 && p.microbatch != microbatch) continue;
    if (p.kind == ProbeKind::NextToken) g.top.push_back({p.id, p.value});
    if (p.kind == ProbeKind::Target) g.target = p.id, g.p_target = p.value;
  }
  return g;
}

FirstStepView view(const FirstStepRun& r, int ran) {
  const RunStep& s = r.first();
  const int L = r.run->model.n_layers, M = r.microbatches;
  FirstStepView v;
  v.ran = std::clamp(ran, 0, static_cast<int>(s.ops.size()));
  v.layer_grads.assign((std::size_t)L, 0.0);
  v.forward_done.assign((std::size_t)M, 0);
  v.backward_done.assign((std::size_t)M, 0);
  std::map<std::uint32_t, std::int64_t> act(s.activations.begin(), s.activations.end());
  bool head = false;
  for (int i = 0; i < v.ran; ++i) {
    const OpSpan& op = s.ops[(std::size_t)i];
    v.last = &op;
    if (auto it = act.find(op.id); it != act.end()) v.activations = it->second;
    const int mb = std::clamp(op.microbatch, 0, M - 1);
    switch (op.kind) {
      case EventKind::Forward:
        ++v.forward_done[(std::size_t)mb];
        head |= mb == 0 && op.layer == L - 1;
        break;
      case EventKind::Backward:
        ++v.backward_done[(std::size_t)mb];
        // This microbatch's probe of the layer: its gradients summed so far.
        for (const ProbeValue& p : s.probes)
          if (p.kind == ProbeKind::LayerGradNorm && p.microbatch == op.microbatch && p.layer == op.layer && p.layer >= 0 &&
              p.layer < L)
            v.layer_grads[(std::size_t)p.layer] = p.value;
        break;
      case EventKind::Update: v.updated = true; break;
      default: break;
    }
  }
  if (v.updated) v.guess = head_guess(r.second(), 0);
  else if (head) v.guess = head_guess(s, 0);
  return v;
}

const FirstStepRun* first_step_run_ready(int microbatches) { return posted_first(microbatches).ready(); }
const FirstStepRun& first_step_run(int microbatches) { return posted_first(microbatches).wait(); }
const RunState* warm_step_ready() { return posted_warm().ready(); }
const RunState& warm_step() { return posted_warm().wait(); }

double StepTimes::total() const {
  double t = update;
  for (double x : per_text) t += x;
  return t;
}

StepTimes step_times(const RunStep& s) {
  StepTimes st;
  for (const OpSpan& op : s.ops) {
    const double d = op.vend - op.vbegin;
    if (op.kind == EventKind::Update) {
      st.update += d;
    } else if (op.kind == EventKind::Forward || op.kind == EventKind::Backward || op.kind == EventKind::WeightGradient) {
      if (op.microbatch < 0) continue;
      if ((int)st.per_text.size() <= op.microbatch) st.per_text.resize((std::size_t)op.microbatch + 1, 0.0);
      st.per_text[(std::size_t)op.microbatch] += d;
    }
  }
  return st;
}

std::string first_step_activity() {
  Recordings& R = recordings();
  std::lock_guard<std::mutex> lock(R.mu);
  for (const auto& [m, p] : R.first)
    if (std::string a = posted_activity(*p); !a.empty()) return a;
  return posted_activity(R.warm);
}

}  // namespace onegpu::app
