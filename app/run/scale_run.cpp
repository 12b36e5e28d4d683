#include "app/run/scale_run.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
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

const ScaleSpan* ScaleStep::span_at(int rank, double v) const {
  for (const ScaleSpan& s : spans)
    if (s.rank == rank && s.begin <= v && v < s.end) return &s;
  return nullptr;
}

std::int64_t RankBytes::most() const { return held.empty() ? 0 : *std::max_element(held.begin(), held.end()); }

ScaleStep read_scale_step(const Plan& plan, const Timeline& tl) {
  ScaleStep s;
  s.pp = plan.config.pp;
  s.dp = plan.config.dp;
  s.ep = plan.config.ep;
  s.microbatches = plan.config.microbatches;
  const int world = plan.world();
  std::vector<std::vector<ScaleSpan>> by_rank(static_cast<std::size_t>(world));
  for (const Op& op : plan.ops) {
    const OpTime& t = tl.ops[op.id];
    s.step_end = std::max(s.step_end, t.end);
    const bool fwd = op.kind == OpKind::Forward;
    const bool bwd = op.is_backward();
    if (op.kind == OpKind::Send && op.payload != Payload::None)
      s.handoffs.push_back({op.rank, op.peer, op.payload == Payload::Gradient, op.microbatch, t.begin, t.end});
    if (!fwd && !bwd) continue;
    s.pipeline_end = std::max(s.pipeline_end, t.end);
    auto& mine = by_rank[static_cast<std::size_t>(op.rank)];
    auto it = std::find_if(mine.begin(), mine.end(), [&](const ScaleSpan& sp) {
      return sp.backward == bwd && sp.microbatch == op.microbatch;
    });
    if (it == mine.end()) mine.push_back({op.rank, bwd, op.microbatch, t.begin, t.end});
    else it->begin = std::min(it->begin, t.begin), it->end = std::max(it->end, t.end);
  }
  s.stage_idle.assign(static_cast<std::size_t>(s.pp), 0.0);
  for (int r = 0; r < world; ++r) {
    auto& mine = by_rank[static_cast<std::size_t>(r)];
    std::sort(mine.begin(), mine.end(), [](const ScaleSpan& a, const ScaleSpan& b) { return a.begin < b.begin; });
    double busy = 0;
    for (const ScaleSpan& sp : mine) busy += sp.end - sp.begin;
    const double idle = s.pipeline_end > 0 ? 1.0 - busy / s.pipeline_end : 0.0;
    s.stage_idle[static_cast<std::size_t>(r / s.dp)] += idle / s.dp;
    s.spans.insert(s.spans.end(), mine.begin(), mine.end());
  }
  for (double v : s.stage_idle) s.bubble += v / s.pp;
  s.textbook = double(s.pp - 1) / double(s.microbatches + s.pp - 1);
  return s;
}

namespace {

constexpr int kRuns = 3;

std::int64_t held(const MemoryTracker& t) {
  return t.current(MemCategory::Weights) + t.current(MemCategory::Gradients) + t.current(MemCategory::Optimizer);
}

RankBytes bytes_of(const ParallelTrainer& t) {
  RankBytes b;
  b.pp = t.options().pp;
  b.dp = t.options().dp;
  b.layers = t.model_config().n_layers;
  b.experts = t.model_config().n_experts;
  for (int r = 0; r < t.world(); ++r) b.held.push_back(held(t.tracker(r)));
  return b;
}

struct Job {
  std::mutex m;
  std::condition_variable cv;
  std::unique_ptr<RankBytes> deeper, wider;
  std::unique_ptr<ScaleStep> step;
  std::atomic<const RankBytes*> deeper_p{nullptr}, wider_p{nullptr};
  std::atomic<const ScaleStep*> step_p{nullptr};
  std::atomic<bool> stop{false};  // the program is closing: leave between phases
  int wanted = 0;                  // how far to go (ScaleWork), raised by requests
  std::string phase = "starting";
  std::string error;
  bool finished = false, started = false;
  std::thread worker;
  std::once_flag once;

  ~Job() {
    stop = true;
    cv.notify_all();
    if (worker.joinable()) worker.join();
  }

  void set_phase(std::string p) {
    if (stop) throw Error("stopped");
    std::lock_guard<std::mutex> lk(m);
    phase = std::move(p);
  }

  // Holds the worker until someone wants work of `level` (or the program closes).
  void await(ScaleWork w) {
    const int level = static_cast<int>(w);
    std::unique_lock<std::mutex> lk(m);
    phase = "waiting";
    cv.wait(lk, [&] { return wanted >= level || stop; });
    if (stop) throw Error("stopped");
  }

  void run() {
    try {
      StoryRun& run = StoryRun::get();
      TokenDataset data = TokenDataset::build(run.tokenizer(), run.sliver().train);
      const int vocab = static_cast<int>(run.tokenizer().vocab_size());
      {
        set_phase("building the 32-layer model on 16 ranks");
        ModelConfig m = model_preset("story");
        m.n_layers = 32;
        m.vocab = vocab;
        ParallelOptions o;
        o.pp = 8, o.dp = 2, o.ep = 2, o.batch = 16, o.microbatches = 8, o.seq_len = 8, o.workers = 1;
        ParallelTrainer t(m, o, data);
        deeper = std::make_unique<RankBytes>(bytes_of(t));
        deeper_p.store(deeper.get());
        cv.notify_all();
      }
      await(ScaleWork::Wider);
      set_phase("building the scale model on 64 ranks");
      ModelConfig m = model_preset("scale");
      m.vocab = vocab;
      ParallelOptions o;
      o.pp = 8, o.dp = 8, o.ep = 8;
      o.microbatches = 8;
      o.schedule = Schedule::OneFOneB;
      o.batch = 64;   // one text per microbatch: 8 first-stage GPUs × 8 microbatches
      o.seq_len = 8;  // short texts keep the step to seconds on two cores
      o.workers = 1;  // one op at a time: each op's measured cost is its own
      o.broadcast_first_step = false;
      ParallelTrainer t(m, o, data);
      wider = std::make_unique<RankBytes>(bytes_of(t));
      wider_p.store(wider.get());
      cv.notify_all();

      await(ScaleWork::Step);
      set_phase("warm-up step on 64 ranks");
      t.step();  // first touches of memory are not the step's cost
      std::vector<double> fastest;
      double loss = 0;
      for (int k = 0; k < kRuns; ++k) {
        set_phase("step " + std::to_string(k + 1) + " of " + std::to_string(kRuns) + " on 64 ranks");
        loss = t.step().loss;  // the last step's loss is the one whose timeline we keep
        const Plan& plan = t.plan();
        const Timeline& tl = t.timeline();
        if (fastest.empty()) fastest.assign(plan.ops.size(), 1e30);
        for (const Op& op : plan.ops)
          if (op.is_compute()) fastest[op.id] = std::min(fastest[op.id], tl.ops[op.id].measured_s);
      }
      for (double& f : fastest) if (f > 1e29) f = 0;
      auto s = std::make_unique<ScaleStep>(read_scale_step(t.plan(), replay_on_clock(t.plan(), o.cost, fastest)));
      s->loss = loss;
      s->texts = o.batch;
      s->seq = o.seq_len;
      s->measured_runs = kRuns;
      step = std::move(s);
      step_p.store(step.get());
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lk(m);
      error = e.what();
    }
    {
      std::lock_guard<std::mutex> lk(m);
      finished = true;
      phase.clear();
    }
    cv.notify_all();
  }

  void start(ScaleWork w) {
    const int level = static_cast<int>(w);
    {
      std::lock_guard<std::mutex> lk(m);
      wanted = std::max(wanted, level);
    }
    cv.notify_all();
    std::call_once(once, [this] {
      std::lock_guard<std::mutex> lk(m);
      started = true;
      worker = std::thread([this] { run(); });
    });
  }

  template <class P>
  void wait_for(const std::atomic<P>& p, ScaleWork w) {
    start(w);
    std::unique_lock<std::mutex> lk(m);
    cv.wait(lk, [&] { return p.load() != nullptr || finished; });
    if (!p.load()) throw Error("the 64-rank run failed: " + error);
  }
};

Job& job() {
  static Job j;
  return j;
}

}  // namespace

void start_scale_runs(ScaleWork upto) { job().start(upto); }
const RankBytes* deeper_bytes_ready() { return job().deeper_p.load(); }
const RankBytes* wider_bytes_ready() { return job().wider_p.load(); }
const ScaleStep* scale_step_ready() { return job().step_p.load(); }

const RankBytes& deeper_bytes() {
  job().wait_for(job().deeper_p, ScaleWork::Deeper);
  return *job().deeper_p.load();
}
const RankBytes& wider_bytes() {
  job().wait_for(job().wider_p, ScaleWork::Wider);
  return *job().wider_p.load();
}
const ScaleStep& scale_step() {
  job().wait_for(job().step_p, ScaleWork::Step);
  return *job().step_p.load();
}

std::string scale_runs_activity() {
  Job& j = job();
  std::lock_guard<std::mutex> lk(j.m);
  if (!j.started || j.finished || j.phase == "waiting") return {};
  return "64-GPU run: " + j.phase;
}

std::string scale_runs_error() {
  Job& j = job();
  std::lock_guard<std::mutex> lk(j.m);
  return j.error;
}

}  // namespace onegpu::app
