#include "app/run/pipeline_step.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "app/run/story_run.h"
#include "trainer/engine/replay.h"
#include "trainer/engine/tracker.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/train/dataset.h"

namespace onegpu::app {

using namespace trainer;

double PipelineStep::busy(int rank) const {
  double b = 0;
  for (const PipeOp& o : ops)
    if (o.rank == rank) b += o.end - o.begin;
  return b;
}

PipelineStep read_pipeline_step(const Plan& plan, const Timeline& tl) {
  PipelineStep s;
  s.pp = plan.config.pp;
  s.dp = plan.config.dp;
  s.microbatches = plan.config.microbatches;
  const int world = plan.world();
  double ar_begin = -1, ar_end = 0;
  s.meet_begin.assign(s.pp, -1.0);
  s.meet_end.assign(s.pp, 0.0);
  for (const Op& op : plan.ops) {
    const OpTime& t = tl.ops[op.id];
    s.step_end = std::max(s.step_end, t.end);
    const bool fwd = op.kind == OpKind::Forward;
    const bool bwd = op.is_backward();
    if (fwd || bwd) {
      s.ops.push_back({op.rank, bwd, op.microbatch, op.layer_begin, op.layer_end, t.begin, t.end});
    } else if (op.kind == OpKind::Send && op.payload != Payload::None) {
      s.handoffs.push_back({op.rank, op.peer, op.payload == Payload::Gradient, op.microbatch, t.begin, t.end});
    } else if (op.kind == OpKind::AllReduce) {
      ar_begin = ar_begin < 0 ? t.begin : std::min(ar_begin, t.begin);
      ar_end = std::max(ar_end, t.end);
      double& mb = s.meet_begin[op.stage];
      mb = mb < 0 ? t.begin : std::min(mb, t.begin);
      s.meet_end[op.stage] = std::max(s.meet_end[op.stage], t.end);
    }
  }
  s.allreduce_begin = std::max(0.0, ar_begin);
  for (double& b : s.meet_begin) b = std::max(0.0, b);
  s.allreduce_end = ar_end;
  // Spans: a rank's ops of one microbatch and direction, joined.
  for (int r = 0; r < world; ++r) {
    std::vector<PipeSpan> mine;
    for (const PipeOp& o : s.ops) {
      if (o.rank != r) continue;
      auto it = std::find_if(mine.begin(), mine.end(), [&](const PipeSpan& sp) {
        return sp.backward == o.backward && sp.microbatch == o.microbatch;
      });
      if (it == mine.end()) mine.push_back({r, o.backward, o.microbatch, o.begin, o.end});
      else it->begin = std::min(it->begin, o.begin), it->end = std::max(it->end, o.end);
    }
    std::sort(mine.begin(), mine.end(), [](const PipeSpan& a, const PipeSpan& b) { return a.begin < b.begin; });
    s.spans.insert(s.spans.end(), mine.begin(), mine.end());
  }
  const Summary sum = summarize(plan, tl);
  s.pipeline_end = sum.pipeline_end;
  s.rank_idle = sum.rank_idle;
  s.stage_idle = sum.stage_idle;
  for (double v : s.stage_idle) s.bubble += v / s.pp;
  s.textbook = double(s.pp - 1) / double(s.microbatches + s.pp - 1);
  return s;
}

namespace {

ParallelOptions pipeline_options(int microbatches) {
  ParallelOptions o;
  o.pp = 2;
  o.dp = 2;
  o.ep = 2;
  o.microbatches = microbatches;
  // 1F1B needs a microbatch per stage; with one microbatch it would be GPipe's order anyway.
  o.schedule = microbatches >= o.pp ? Schedule::OneFOneB : Schedule::GPipe;
  o.batch = 8;
  o.workers = 1;  // one op at a time: each op's measured cost is its own
  o.broadcast_first_step = false;
  return o;
}

ModelConfig story8(const StoryRun& run) {
  ModelConfig m = model_preset("story8");
  m.vocab = static_cast<int>(run.tokenizer().vocab_size());
  return m;
}

std::int64_t held(const MemoryTracker& t) {
  return t.current(MemCategory::Weights) + t.current(MemCategory::Gradients) + t.current(MemCategory::Optimizer);
}

}  // namespace

const std::vector<std::int64_t>& story_pipeline_held_bytes() {
  static const std::vector<std::int64_t> bytes = [] {
    StoryRun& run = StoryRun::get();
    TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
    ParallelTrainer t(story8(run), pipeline_options(1), data);
    std::vector<std::int64_t> b;
    for (int r = 0; r < t.world(); ++r) b.push_back(held(t.tracker(r)));
    return b;
  }();
  return bytes;
}

namespace {
struct StepSlot {
  std::mutex mu;  // held while the step is measured: a second caller waits instead of rerunning it
  bool done = false;
  PipelineStep step;
};
StepSlot& slot(int microbatches) {
  static StepSlot slots[5];
  return slots[microbatches];
}
}  // namespace

const PipelineStep& story_pipeline_step(int microbatches) {
  if (microbatches != 1 && microbatches != 2 && microbatches != 4)
    throw Error("pipeline chapters run 1, 2 or 4 microbatches, not " + std::to_string(microbatches));
  StepSlot& sl = slot(microbatches);
  std::lock_guard<std::mutex> lock(sl.mu);
  if (!sl.done) {
    StoryRun& run = StoryRun::get();
    TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
    ParallelTrainer t(story8(run), pipeline_options(microbatches), data);
    t.step();  // warm-up: first touches of memory are not the step's cost
    // Measured op costs are noisy on a busy machine, and noise only adds: each op's fastest.
    std::vector<double> fastest;
    double loss = 0;
    for (int k = 0; k < kMeasuredSteps; ++k) {
      ParallelStepResult r = t.step();
      if (k == 0) loss = r.loss;  // the first measured step's (the weights move every step)
      const Timeline& tl = t.timeline();
      if (fastest.empty()) fastest.assign(tl.ops.size(), 1e30);
      if (fastest.size() != tl.ops.size()) throw Error("pipeline step: the plan changed between steps");
      for (std::size_t i = 0; i < fastest.size(); ++i) fastest[i] = std::min(fastest[i], tl.ops[i].measured_s);
    }
    PipelineStep best = read_pipeline_step(t.plan(), replay_on_clock(t.plan(), t.options().cost, fastest));
    best.loss = loss;
    for (int r = 0; r < t.world(); ++r) best.held_bytes.push_back(held(t.tracker(r)));
    sl.step = std::move(best);
    sl.done = true;
  }
  return sl.step;
}

void warm_story_pipeline_steps() {
  // StoryRun first, so that it outlives the warmer (statics die in reverse order of creation).
  StoryRun::get();
  struct Warmer {
    std::thread thread;
    std::atomic<bool> stop{false};
    ~Warmer() {
      stop = true;
      if (thread.joinable()) thread.join();  // at most the step being measured
    }
  };
  static Warmer w;
  if (w.thread.joinable()) return;
  w.thread = std::thread([] {
    for (int m : {1, 2, 4}) {
      if (w.stop) return;
      try {
        story_pipeline_step(m);
      } catch (const std::exception&) {
        return;  // the chapter's own call reports it
      }
    }
  });
}

}  // namespace onegpu::app
