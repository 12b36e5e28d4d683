#include "app/live/job_runner.h"
#include "app/live/step_records.h"
#include "app/cli/asset_files.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#endif

#include "trainer/data/bpe_tokenizer.h"
#include "trainer/data/corpus.h"
#include "trainer/train/heldout.h"
#include "trainer/error.h"
#include "trainer/model/config.h"
#include "trainer/model/params.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/train/dataset.h"

namespace onegpu::app {

using trainer::Event;
using trainer::EventKind;

// ---- commands and the live run's private half ----

struct JobRunner::Command {
  enum Kind { Configure, Play, Pause, StepOp, StepMicrobatch, StepWhole, Reset, Job, Branch } kind = Pause;
  cli::TrainArgs args;
  int step = 0;  // Branch
  std::uint64_t serial = 0;  // Branch: its number, for cancel_branch
  std::size_t ring = std::size_t{1} << 16;
  double pace = 0;
  std::string what;
  std::function<void()> job;
  std::shared_ptr<std::promise<void>> done;
  static Command of(Kind k) {
    Command c;
    c.kind = k;
    return c;
  }
};

// What the runner thread alone touches: the corpus it tokenised (kept across configurations
// that read the same one) and the trainer.
struct JobRunner::Live {
  std::string corpus_path;
  std::unique_ptr<trainer::Corpus> corpus;
  std::shared_ptr<trainer::BpeTokenizer> tok;
  std::unique_ptr<trainer::TokenDataset> data;
  std::unique_ptr<trainer::TokenDataset> heldout;  // the Lab's held-out chart
  std::unique_ptr<trainer::HeldoutModel> heldout_model;  // evaluates it, kept for the run's model
  std::unique_ptr<trainer::ParallelTrainer> trainer;
  std::shared_ptr<LiveRun> info;
  std::int64_t step_wall_begin = 0;
  std::vector<float> master_before;  // by-layer runs: the weights before this step's update
  // The run's state at the start of some steps (ParallelTrainer::state_into), oldest first: a
  // branch of a late step starts from the newest one at or before it instead of training every
  // step from the first again. keep_state() takes one before a step once the time since the
  // last is 50 times what that one took (2% of a free run's time at most, once the arrays are
  // made; before every step of a run stepped by hand or at a pace), and keeps as many as fit in
  // kStatesBytes, at most eight, at least one.
  std::deque<trainer::ParallelTrainer::State> states;
  std::int64_t state_taken_at = 0, state_cost = 0;
};

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A posted job (a chapter's recorded run) gives way to the picture. It trains on every core, and
// on a two-core machine the rasteriser's threads then got half their time: frames that take
// 12 ms took 30 to 45 while a job ran. So the job runs on a thread of its own at a lower
// priority (the threads it starts inherit it) while the runner waits for it; the runner's own
// thread keeps its priority for the live run (an unprivileged thread cannot raise it back).
// With nothing else to run, a job goes as fast as before.
constexpr int kJobNice = 10;

#if defined(__linux__)
// Whether other processes left the cores alone since the last call: the machine's busy time
// (/proc/stat, steal included) less this process's own, under a quarter of one core. False on
// the first call and wherever it cannot tell.
bool others_quiet() {
  static std::mutex mu;
  static double last_busy = -1, last_self = 0;
  static bool last_quiet = false;
  static std::chrono::steady_clock::time_point last_t;
  std::lock_guard<std::mutex> lock(mu);
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return false;
  unsigned long long v[8] = {};
  const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                            &v[5], &v[6], &v[7]);
  std::fclose(f);
  if (n < 8) return false;
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double busy = static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz;  // not idle, iowait
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const double self = u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - last_t).count();
  // Jobs that follow each other closely (the long run's 40 ms chunks) keep the last answer
  // until a sample spans a quarter of a second: /proc/stat counts in ticks of 10 ms.
  if (last_busy >= 0 && dt < 0.25) return last_quiet;
  last_quiet = last_busy >= 0 && (busy - last_busy - (self - last_self)) / dt < 0.25;
  last_busy = busy, last_self = self, last_t = now;
  return last_quiet;
}
#endif

// idle_class: SCHED_IDLE instead while nothing else keeps the cores busy (set_jobs_idle_class);
// under other load an idle-class job would hardly run, so it keeps nice 10 then.
void run_yielding(const std::function<void()>& job, bool idle_class) {
  std::exception_ptr error;
#if defined(__linux__)
  idle_class = idle_class && others_quiet();
#endif
  std::thread t([&] {
#if defined(__linux__)
    sched_param none{};
    if (!idle_class || pthread_setschedparam(pthread_self(), SCHED_IDLE, &none) != 0)
      setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kJobNice);  // a thread's own nice
#endif
    try {
      job();
    } catch (...) {
      error = std::current_exception();
    }
  });
  t.join();
  if (error) std::rethrow_exception(error);
}

int worker_count(const cli::TrainArgs& a) {
  if (a.workers > 0) return a.workers;
  return std::max(1, (int)std::thread::hardware_concurrency());
}

// The trainer's options for a run of the Lab's, the live one or a branch of it.
trainer::ParallelOptions run_options(const cli::TrainArgs& a) {
  trainer::ParallelOptions o = cli::parallel_options(a);
  o.workers = worker_count(a);
  // The window draws on the cores the workers train on: an op costs its thread's CPU time, so
  // a worker preempted by the drawing is not shown as a slower GPU (a 64-rank scale run read
  // 88% idle in the window and 84% headless on wall costs; 79% and 79-82% on these).
  o.thread_cpu_costs = true;
  return o;
}

}  // namespace

JobRunner::JobRunner() : thread_([this] { thread_main(); }) {}

JobRunner::~JobRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

JobRunner& JobRunner::shared() {
  static JobRunner runner;
  return runner;
}

std::string JobRunner::check(const cli::TrainArgs& a) {
  try {
    trainer::parallel_run_config(trainer::model_preset(a.model), cli::parallel_options(a));
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

// ---- the command side (any thread) ----

void JobRunner::push(Command c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(c));
    status_.queued = queue_.size();
  }
  cv_.notify_all();
}

void JobRunner::configure(const cli::TrainArgs& a, std::size_t ring_capacity) {
  Command c;
  c.kind = Command::Configure;
  c.args = a;
  c.ring = ring_capacity;
  push(std::move(c));
}
void JobRunner::play(double ops_per_second) {
  Command c;
  c.kind = Command::Play;
  c.pace = ops_per_second;
  push(std::move(c));
}
void JobRunner::pause() { push(Command::of(Command::Pause)); }
void JobRunner::step_op() { push(Command::of(Command::StepOp)); }
void JobRunner::step_microbatch() { push(Command::of(Command::StepMicrobatch)); }
void JobRunner::step_whole() { push(Command::of(Command::StepWhole)); }
void JobRunner::reset() { push(Command::of(Command::Reset)); }
void JobRunner::branch(const cli::TrainArgs& other, int step) {
  Command c;
  c.kind = Command::Branch;
  c.args = other;
  c.step = step;
  c.serial = ++branches_asked_;
  push(std::move(c));
}

void JobRunner::cancel_branch() { branches_cancelled_.store(branches_asked_.load()); }

std::shared_ptr<const BranchRun> JobRunner::branched() const {
  std::lock_guard<std::mutex> lock(mu_);
  return branch_;
}

void JobRunner::set_jobs_idle_class(bool on) {
#if defined(__linux__)
  if (on) others_quiet();  // the first sample: the first job then sees the load since now
#endif
  jobs_idle_class_ = on;
}

std::shared_future<void> JobRunner::post(std::string what, std::function<void()> job) {
  Command c;
  c.kind = Command::Job;
  c.what = std::move(what);
  c.job = std::move(job);
  c.done = std::make_shared<std::promise<void>>();
  std::shared_future<void> f = c.done->get_future().share();
  push(std::move(c));
  return f;
}

RunnerStatus JobRunner::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  RunnerStatus s = status_;
  s.working = busy_;
  return s;
}

std::shared_ptr<const LiveRun> JobRunner::live() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

void JobRunner::wait_idle(const std::function<void()>& pump) {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (queue_.empty() && !busy_) return;
      idle_cv_.wait_for(lock, std::chrono::milliseconds(2));
      if (queue_.empty() && !busy_) return;
    }
    if (pump) pump();
  }
}

void JobRunner::wait_steps(int steps, const std::function<void()>& pump) {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      const bool stopped = queue_.empty() && !busy_ && status_.mode == RunMode::Paused;
      if (status_.steps_done >= steps || !status_.error.empty() || stopped) return;
      idle_cv_.wait_for(lock, std::chrono::milliseconds(2));
    }
    if (pump) pump();
  }
}

// ---- the runner thread ----

void JobRunner::thread_main() {
  run_ = std::make_unique<Live>();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!queue_.empty()) {
      Command c = std::move(queue_.front());
      queue_.pop_front();
      status_.queued = queue_.size();
      busy_ = true;
      lock.unlock();
      carry_out(c);
      lock.lock();
      busy_ = false;
      idle_cv_.notify_all();
      continue;
    }
    if (mode_ != RunMode::Paused && run_->trainer) {
      lock.unlock();
      quantum();
      lock.lock();
      continue;
    }
    idle_cv_.notify_all();
    cv_.wait(lock);
  }
  lock.unlock();
  // A step left half-done by hand is finished so the engine's workers stop cleanly.
  try {
    if (run_->trainer && status_.in_step) run_->trainer->finish_step();
  } catch (...) {
  }
  run_.reset();
}

void JobRunner::publish_status() {
  RunnerStatus s;
  s.generation = generation_;
  s.mode = mode_;
  s.ops_per_second = pace_;
  if (auto* t = run_->trainer.get()) {
    s.steps_done = t->steps_done();
    s.in_step = status_.in_step;  // kept by ensure_step / finish_step
    if (s.in_step) {
      trainer::Engine& e = t->engine();
      s.ops_done = e.ops_done();
      auto waiting = e.waiting_ops();
      if (!waiting.empty()) s.next_op = waiting.front();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  s.microbatches_released = status_.microbatches_released;
  s.error = status_.error;
  s.building = status_.building;
  s.building_what = status_.building_what;
  s.job = status_.job;
  s.kept_states = std::move(status_.kept_states);  // kept by keep_state
  s.queued = queue_.size();
  status_ = s;
}

void JobRunner::carry_out(Command& c) {
  auto fail = [&](const std::string& why) {
    mode_ = RunMode::Paused;
    std::lock_guard<std::mutex> lock(mu_);
    status_.error = why;
  };
  auto clear_error = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    status_.error.clear();
  };
  try {
    switch (c.kind) {
      case Command::Configure:
        do_configure(c.args, c.ring);
        break;
      case Command::Reset:
        if (run_->info) {
          cli::TrainArgs a = run_->info->args;
          do_configure(a, run_->info->events->capacity(0));
        }
        break;
      case Command::Branch:
        do_branch(c.args, c.step, c.serial);
        break;
      case Command::Play:
        if (!run_->trainer) throw trainer::Error("no run to play: choose a configuration first");
        clear_error();
        mode_ = c.pace > 0 ? RunMode::Paced : RunMode::Free;
        pace_ = c.pace;
        break;
      case Command::Pause:
        mode_ = RunMode::Paused;
        break;
      case Command::StepOp: {
        if (!run_->trainer) throw trainer::Error("no run to step: choose a configuration first");
        mode_ = RunMode::Paused;
        ensure_step();
        by_hand_ = true;
        run_->trainer->engine().step_one();
        after_ops();
        break;
      }
      case Command::StepMicrobatch: {
        if (!run_->trainer) throw trainer::Error("no run to step: choose a configuration first");
        mode_ = RunMode::Paused;
        ensure_step();
        by_hand_ = true;
        int k;
        {
          std::lock_guard<std::mutex> lock(mu_);
          k = ++status_.microbatches_released;
        }
        trainer::Engine& e = run_->trainer->engine();
        if (k > run_->info->args.microbatches) e.release_all();
        else e.release_microbatches(k);
        e.wait();
        after_ops();
        break;
      }
      case Command::StepWhole:
        if (!run_->trainer) throw trainer::Error("no run to step: choose a configuration first");
        mode_ = RunMode::Paused;
        ensure_step();
        finish_step(by_hand_);
        break;
      case Command::Job: {
        {
          std::lock_guard<std::mutex> lock(mu_);
          status_.job = c.what;
        }
        try {
          run_yielding(c.job, jobs_idle_class_);
          c.done->set_value();
        } catch (...) {
          c.done->set_exception(std::current_exception());
        }
        std::lock_guard<std::mutex> lock(mu_);
        status_.job.clear();
        break;
      }
    }
    if (c.kind != Command::Job && c.kind != Command::Configure && c.kind != Command::Reset && c.kind != Command::Pause)
      clear_error();
  } catch (const std::exception& e) {
    fail(e.what());
  }
  publish_status();
}

void JobRunner::do_configure(const cli::TrainArgs& a, std::size_t ring_capacity) {
  const std::string why = check(a);
  if (!why.empty()) throw trainer::Error(why);  // the running configuration stays as it was
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_.building = true;
    const int ranks = a.pp * a.dp;
    status_.building_what = "building " + a.model + " on " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
  }
  struct Done {
    JobRunner* r;
    ~Done() {
      std::lock_guard<std::mutex> lock(r->mu_);
      r->status_.building = false;
      r->status_.building_what.clear();
    }
  } done{this};
  Live& L = *run_;
  // A half-done step of the old run is finished first: its engine must not be left holding ops.
  if (L.trainer && status_.in_step) {
    try {
      L.trainer->finish_step();
    } catch (...) {
    }
  }
  L.trainer.reset();
  L.heldout_model.reset();
  L.states.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_.in_step = false;
    status_.microbatches_released = 0;
    status_.kept_states.clear();
  }
  if (!L.corpus || L.corpus_path != a.corpus) {
    L.corpus = std::make_unique<trainer::Corpus>(cli::training_corpus(a.corpus));
    L.tok = std::make_shared<trainer::BpeTokenizer>(trainer::BpeTokenizer::train(L.corpus->train));
    L.data = std::make_unique<trainer::TokenDataset>(trainer::TokenDataset::build(*L.tok, L.corpus->train));
    L.heldout = std::make_unique<trainer::TokenDataset>(trainer::TokenDataset::build(*L.tok, L.corpus->heldout));
    L.corpus_path = a.corpus;
  }
  trainer::ModelConfig mc = trainer::model_preset(a.model);
  mc.vocab = (int)L.tok->vocab_size();
  trainer::ParallelOptions o = run_options(a);
  const int workers = o.workers;
  // One rank: a learner steps it layer by layer (the same maths, bit for bit).
  o.op_per_layer = a.dp == 1 && a.ep == 1 && a.pp == 1;
  auto info = std::make_shared<LiveRun>();
  info->generation = ++generation_;
  info->args = a;
  info->args.device = o.device;  // resolved: auto became cpu or cuda
  info->model = mc;
  info->workers = workers;
  info->seq = a.seq > 0 ? a.seq : mc.seq_len;
  info->tokens_per_step = (std::int64_t)a.batch * info->seq;
  info->by_layer = o.op_per_layer;
  info->tokenizer = L.tok;
  // Lanes: one per engine worker, plus the runner's own (which waits a little for room).
  info->events = std::make_shared<trainer::EventStream>(workers + 1, std::max<std::size_t>(ring_capacity, 16));
  o.events = info->events.get();
  const trainer::RunConfig rc = trainer::parallel_run_config(mc, o);
  info->steady_plan = std::make_shared<const trainer::Plan>(trainer::compile_plan(rc));
  if (o.broadcast_first_step)
    info->first_plan = std::make_shared<const trainer::Plan>(
        trainer::compile_plan(rc, trainer::PlanOptions{.broadcast_model = true}));
  L.trainer = std::make_unique<trainer::ParallelTrainer>(mc, o, *L.data);
  L.info = info;
  // What every rank holds before its first step (weights, gradients, optimizer state).
  for (const Event& e : resident_records(*L.trainer)) emit(e);
  mode_ = RunMode::Paused;
  by_hand_ = false;
  std::lock_guard<std::mutex> lock(mu_);
  live_ = info;
  status_.error.clear();
}

void JobRunner::ensure_step() {
  if (status_.in_step) return;  // only this thread writes in_step
  run_->step_wall_begin = now_ns();
  if (run_->info->by_layer) {
    const auto& m = run_->trainer->params(0).master;
    run_->master_before.assign(m.data(), m.data() + m.size());
  }
  keep_state();
  run_->trainer->begin_step();
  by_hand_ = false;
  std::lock_guard<std::mutex> lock(mu_);
  status_.in_step = true;
  status_.microbatches_released = 0;
}

void JobRunner::keep_state() {
  // Eight: RunState keeps kFullSteps (6) steps whole, each of them a step to branch.
  constexpr std::size_t kStatesBytes = std::size_t{128} << 20, kMaxStates = 8;
  Live& L = *run_;
  const int step = L.trainer->steps_done();
  if (step == 0 || (!L.states.empty() && L.states.back().step == step)) return;  // step 1 starts from the seed
  const std::int64_t t0 = now_ns();
  // A free run: 2% of its time at most. By hand or at a pace, every step (a press, a tick, is
  // far longer than the copy; the first copies, into fresh pages, cost the most).
  if (mode_ == RunMode::Free && !L.states.empty() && t0 - L.state_taken_at < 50 * L.state_cost) return;
  trainer::ParallelTrainer::State s;
  const std::size_t bytes = L.states.empty() ? 0 : L.states.back().bytes();
  const std::size_t fit = bytes ? std::clamp<std::size_t>(kStatesBytes / bytes, 1, kMaxStates) : kMaxStates;
  if (L.states.size() >= fit) {  // the oldest one's arrays take the new state
    s = std::move(L.states.front());
    L.states.pop_front();
  }
  // Arrays made now cost their first writes once (a 200 MB state of the scale model took half a
  // second): only a copy into kept arrays sets the pace, or a free run kept one state in a minute.
  const bool fresh = s.master.empty();
  L.trainer->state_into(s);
  L.states.push_back(std::move(s));
  L.state_taken_at = now_ns();
  L.state_cost = fresh ? 0 : L.state_taken_at - t0;
  std::lock_guard<std::mutex> lock(mu_);
  status_.kept_states.clear();
  for (const auto& k : L.states) status_.kept_states.push_back(k.step);
}

void JobRunner::after_ops() {
  if (run_->trainer->engine().finished()) finish_step(by_hand_);
}

void JobRunner::quantum() {
  try {
    ensure_step();
    trainer::Engine& e = run_->trainer->engine();
    if (mode_ == RunMode::Paced) {
      const auto t0 = std::chrono::steady_clock::now();
      e.step_one();
      after_ops();
      publish_status();
      // Wait out the rest of the tick, waking early for a command.
      const auto tick = std::chrono::duration<double>(1.0 / std::max(0.01, pace_));
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_until(lock, t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(tick),
                     [&] { return stop_ || !queue_.empty(); });
      return;
    }
    // Free: a slice of the step at a time, so a pause lands between two ops, not at the
    // step's end (a 512-rank step takes seconds).
    const std::size_t total = run_->info->plan_of(run_->trainer->steps_done()).ops.size();
    e.release_ops((int)std::max<std::size_t>(64, total / 8));
    e.wait();
    after_ops();
    publish_status();
  } catch (const std::exception& ex) {
    mode_ = RunMode::Paused;
    {
      std::lock_guard<std::mutex> lock(mu_);
      status_.error = ex.what();
      status_.in_step = false;
    }
    publish_status();
  }
}

void JobRunner::emit(const Event& e) {
  trainer::EventStream& s = *run_->info->events;
  const std::size_t lane = (std::size_t)run_->info->workers;
  // The runner is not a compute worker: it may wait a little for the app to drain (a frame
  // or two); past that the event is dropped and counted like any other, never waited on.
  for (int i = 0; s.room(lane) < 2 && i < 50; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  s.push(lane, e);
}


void JobRunner::do_branch(const cli::TrainArgs& other, int step, std::uint64_t serial) {
  Live& L = *run_;
  if (!L.info || !L.data) throw trainer::Error("no run to branch from: choose a configuration first");
  if (step < 0 || step >= status_.steps_done) throw trainer::Error("branch: step " + std::to_string(step + 1) + " is not finished yet");
  cli::TrainArgs a = L.info->args;
  a.dp = other.dp, a.ep = other.ep, a.pp = other.pp, a.vstages = other.vstages;
  a.microbatches = other.microbatches, a.schedule = other.schedule, a.link = other.link;
  if (const std::string why = check(a); !why.empty()) throw trainer::Error(why);
  const std::string what = "branching step " + std::to_string(step + 1) + " under dp " + std::to_string(a.dp) + " ep " +
                           std::to_string(a.ep) + " pp " + std::to_string(a.pp) + " " + a.schedule;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_.job = what;
  }
  publish_status();
  trainer::ParallelOptions o = run_options(a);
  o.op_per_layer = false;
  auto events = std::make_shared<trainer::EventStream>(o.workers + 1, std::size_t{1} << 16);
  o.events = events.get();
  auto info = std::make_shared<LiveRun>();
  info->generation = std::numeric_limits<std::uint64_t>::max() / 4 + generation_;  // never a live run's
  info->args = a;
  info->args.device = o.device;  // resolved: auto became cpu or cuda
  info->model = L.info->model;
  info->workers = o.workers;
  info->seq = L.info->seq;
  info->tokens_per_step = L.info->tokens_per_step;
  info->tokenizer = L.tok;
  const trainer::RunConfig rc = trainer::parallel_run_config(info->model, o);
  info->steady_plan = std::make_shared<const trainer::Plan>(trainer::compile_plan(rc));
  if (o.broadcast_first_step)
    info->first_plan = std::make_shared<const trainer::Plan>(trainer::compile_plan(rc, trainer::PlanOptions{.broadcast_model = true}));
  trainer::ParallelTrainer t(info->model, o, *L.data);
  // From the live run's newest state at or before the step (keep_state), else from the seed.
  std::vector<int> kept_steps;
  for (const auto& k : L.states) kept_steps.push_back(k.step);
  const int first = branch_first_step(kept_steps, step);
  const trainer::ParallelTrainer::State* from = nullptr;
  for (const auto& k : L.states)
    if (first > 0 && k.step == first) from = &k;
  if (from) t.set_state(*from);
  // A trainer's first step pays once for memory touched for the first time and pools filled: a
  // branch that would time its very first step runs it once to warm up, then again from the
  // same state (a branch from the seed keeps the pane's note about step 1 instead).
  if (from && first == step) {
    t.step();
    events->drain([](const Event&) {});
    t.set_state(*from);
  }
  auto out = std::make_shared<BranchRun>();
  out->step = step;
  out->first = first;
  out->live_generation = L.info->generation;
  std::vector<Event> kept;
  std::int64_t said = now_ns();
  for (int i = first; i <= step; ++i) {
    if (branches_cancelled_.load() >= serial) {  // cancel_branch: nothing is kept, the last branch stays
      std::lock_guard<std::mutex> lock(mu_);
      status_.job.clear();
      return;
    }
    // A step far from the newest state before it (or from the seed) is reached by training the
    // steps between: say how far it is.
    if (now_ns() - said > 250'000'000) {
      said = now_ns();
      {
        std::lock_guard<std::mutex> lock(mu_);
        status_.job = what + ": step " + std::to_string(i + 1) + " of " + std::to_string(step + 1);
      }
      publish_status();
    }
    if (i == step) out->weights_before = fingerprint(t.master_weights());
    const std::int64_t w0 = now_ns();
    const trainer::ParallelStepResult r = t.step();
    const std::int64_t w1 = now_ns();
    // The engine's events of this step; only the branch step's are kept.
    events->drain([&](const Event& e) {
      if (i == step) kept.push_back(e);
    });
    if (i < step) continue;
    for (const Event& e : step_records(r, step, info->model.n_experts)) kept.push_back(e);
    Event end;
    end.kind = EventKind::StepEnd;
    end.step = step;
    end.value = r.loss;
    end.bytes = info->tokens_per_step;
    end.virtual_end = r.virtual_seconds;
    end.wall_begin_ns = w0;
    end.wall_end_ns = w1;
    kept.push_back(end);
  }
  out->events = std::move(kept);
  out->run = info;
  std::lock_guard<std::mutex> lock(mu_);
  branch_ = out;
  status_.job.clear();
}

void JobRunner::finish_step(bool by_hand) {
  Live& L = *run_;
  const trainer::ParallelStepResult r = L.trainer->finish_step();
  const std::int64_t wall_end = now_ns();
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_.in_step = false;
    status_.microbatches_released = 0;
  }
  by_hand_ = false;
  const int step = r.step - 1;  // the step's number as its op events carry it
  Event base;
  base.step = step;
  base.microbatch = -1;
  for (const Event& e : step_records(r, step, L.info->model.n_experts)) emit(e);
  // A fingerprint of the weights, so "by hand" and "free" steps can be compared bit for bit
  // (skipped for big runs: gathering 512 shards costs more than the step).
  const bool small = (std::int64_t)L.info->world() * 4 * trainer::param_breakdown(L.info->model).total() < (std::int64_t)1 << 28;
  // The held-out loss for the charts: on a few windows, every tenth step, small runs only.
  if (small && L.heldout && !L.heldout->tokens.empty() && (r.step % 10 == 0 || r.step == 1)) {
    try {
      Event h = base;
      h.kind = EventKind::Probe;
      h.detail = (std::uint8_t)trainer::ProbeKind::HeldOutLoss;
      // Made for the run's model once: do_configure drops it with the trainer it was made for.
      if (!L.heldout_model) L.heldout_model = std::make_unique<trainer::HeldoutModel>(L.trainer->model_config());
      h.value = L.heldout_model->loss(L.trainer->master_weights(), *L.heldout, 16);
      emit(h);
    } catch (const trainer::Error&) {
      // Too little held-out text for one window: the chart goes without.
    }
  }
  if (small) {
    const std::uint64_t h = fingerprint(L.trainer->master_weights());
    Event f = base;
    f.kind = EventKind::Probe;
    f.detail = (std::uint8_t)trainer::ProbeKind::WeightsFingerprint;
    f.bytes = (std::int64_t)h;
    emit(f);
  }
  // How far the update moved each layer's weights (by-layer runs: one rank, one store).
  if (L.info->by_layer && !L.master_before.empty())
    for (const Event& e : update_size_records(L.trainer->params(0), L.master_before, L.info->model.n_layers, step)) emit(e);
  // Last: the run state closes the step when it sees this.
  Event s = base;
  s.kind = EventKind::StepEnd;
  s.detail = by_hand ? 1 : 0;
  s.value = r.loss;
  s.bytes = L.info->tokens_per_step;
  s.virtual_end = r.virtual_seconds;
  s.wall_begin_ns = L.step_wall_begin;
  s.wall_end_ns = wall_end;
  emit(s);
}

}  // namespace onegpu::app
