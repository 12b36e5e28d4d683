#include "app/run/scale_run.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "app/run/model_memory.h"
#include "app/run/story_run.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/train/dataset.h"

namespace onegpu::app {

using namespace trainer;

std::int64_t RankBytes::most() const { return held.empty() ? 0 : *std::max_element(held.begin(), held.end()); }

namespace {

constexpr int kRuns = 3;

RankBytes bytes_of(const ParallelTrainer& t) {
  RankBytes b;
  b.pp = t.options().pp;
  b.dp = t.options().dp;
  b.layers = t.model_config().n_layers;
  b.experts = t.model_config().n_experts;
  b.held = held_bytes_per_rank(t);
  return b;
}

struct Job {
  std::mutex m;
  std::condition_variable cv;
  std::unique_ptr<RankBytes> deeper, wider;
  std::unique_ptr<PipelineStep> step;
  std::atomic<const RankBytes*> deeper_p{nullptr}, wider_p{nullptr};
  std::atomic<const PipelineStep*> step_p{nullptr};
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
      set_phase("warm-up and " + std::to_string(kRuns) + " measured steps on 64 ranks");
      const FastestRuns f = fastest_of(t, kRuns);
      auto s = std::make_unique<PipelineStep>(read_step(t.plan(), f.timeline));
      s->loss = f.losses.back();
      s->texts = o.batch;
      s->seq = o.seq_len;
      s->measured_runs = f.runs;
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
const PipelineStep* scale_step_ready() { return job().step_p.load(); }

const RankBytes& deeper_bytes() {
  job().wait_for(job().deeper_p, ScaleWork::Deeper);
  return *job().deeper_p.load();
}
const RankBytes& wider_bytes() {
  job().wait_for(job().wider_p, ScaleWork::Wider);
  return *job().wider_p.load();
}
const PipelineStep& scale_step() {
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
