#include "trainer/engine/engine.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <string>

#include "trainer/error.h"
#include "trainer/ops/start_threads.h"

namespace onegpu::trainer {

namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU time of the calling thread (engine.h: EngineOptions::thread_cpu_costs).
std::int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (std::int64_t)t.tv_sec * 1'000'000'000 + t.tv_nsec;
}

EventKind event_kind(OpKind k) { return op_kind_info(k).event; }  // the one table of kinds, plan.h
}  // namespace

Engine::Engine(const Plan& plan, OpRunner& runner, EngineOptions options)
    : plan_(plan), runner_(runner), options_(options) {
  int n = options_.workers;
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options_.events && options_.events->producers() < static_cast<std::size_t>(n))
    throw Error("event stream has " + std::to_string(options_.events->producers()) +
                " lanes for " + std::to_string(n) + " workers");
  device_timed_ = runner_.device_timed();
  tracker_ = std::make_unique<DependencyTracker>(plan_);
  clock_ = std::make_unique<VirtualClock>(plan_, options_.cost);
  tracker_->start(scratch_);  // an idle engine at the start of step options.step, all held
  held_ = scratch_;
  scratch_.clear();
  step_ = options_.step;
  epoch_ns_ = now_ns();
  threads_.reserve(static_cast<std::size_t>(n));
  start_threads(threads_, n, "an engine worker", [this](int i) { worker_main(i); }, [this] {
    std::lock_guard lk(mu_);
    stop_ = true;
    work_cv_.notify_all();
  });
}

Engine::~Engine() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void Engine::begin(int step) {
  std::unique_lock lk(mu_);
  idle_cv_.wait(lk, [&] { return running_ == 0 && queue_.empty(); });
  tracker_->reset();
  clock_->reset();
  queue_.clear();
  held_.clear();
  scratch_.clear();
  release_all_ = false;
  mb_released_ = 0;
  budget_ = 0;
  error_ = nullptr;
  done_.clear();
  timed_ = 0;
  step_ = step;
  epoch_ns_ = now_ns();
  tracker_->start(scratch_);
  held_ = scratch_;
  scratch_.clear();
}

const Timeline& Engine::run() {
  begin(step_);
  release_all();
  if (wait() != EngineState::Finished)
    throw Error("internal: engine paused while free-running");
  ++step_;
  return timeline();
}

int Engine::task_microbatch(const Task& t) const {
  const std::uint32_t id = t.collective ? plan_.collectives[t.index].ops.front() : t.index;
  return plan_.ops[id].microbatch;
}

OpKind Engine::task_kind(const Task& t) const {
  return t.collective ? plan_.collectives[t.index].kind : plan_.ops[t.index].kind;
}

double Engine::task_priority(const Task& t) const {
  const std::uint32_t id = t.collective ? plan_.collectives[t.index].ops.front() : t.index;
  return priority_.empty() ? static_cast<double>(id) : priority_[id];
}

void Engine::ensure_priority() {
  if (!priority_.empty()) return;
  try {
    const Timeline tl = simulate(plan_, CostModel::unit());
    priority_.resize(plan_.ops.size());
    for (std::size_t i = 0; i < priority_.size(); ++i) priority_[i] = tl.ops[i].begin;
  } catch (const Error&) {
    // A plan that cannot finish: order by op id; wait() reports the deadlock.
  }
}

bool Engine::passes_gate(const Task& t) const {
  if (release_all_) return true;
  const int mb = task_microbatch(t);
  if (mb >= 0) return mb < mb_released_;
  // Whole-step ops: the initial broadcast (or ZeRO-1's all-gather) goes with the first microbatch, gradient
  // all-reduce and update with the last.
  if (task_kind(t) == OpKind::Broadcast || task_kind(t) == OpKind::AllGather) return mb_released_ > 0;
  return mb_released_ >= plan_.config.microbatches;
}

void Engine::enqueue_ready(std::vector<Task>& ready) {
  for (const Task& t : ready) {
    if (passes_gate(t)) {
      queue_.push_back(t);
    } else if (budget_ > 0) {  // released ops not yet spent go to whatever is ready next
      --budget_;
      queue_.push_back(t);
    } else {
      held_.push_back(t);
    }
  }
  ready.clear();
}

void Engine::release_held() {
  if (held_.empty()) return;
  if (budget_ > 0) {
    ensure_priority();
    sort_held();
  }
  std::vector<Task> still, go;
  for (const Task& t : held_) {
    if (passes_gate(t)) {
      go.push_back(t);
    } else if (budget_ > 0) {
      --budget_;
      go.push_back(t);
    } else {
      still.push_back(t);
    }
  }
  // The queue is taken from its back: the first by planned begin goes in last, to run first.
  queue_.insert(queue_.end(), go.rbegin(), go.rend());
  held_.swap(still);
}

void Engine::release_ops(int n) {
  {
    std::lock_guard lk(mu_);
    budget_ += n;
    release_held();
  }
  work_cv_.notify_all();
}

void Engine::release_microbatches(int count) {
  {
    std::lock_guard lk(mu_);
    mb_released_ = std::max(mb_released_, count);
    release_held();
  }
  work_cv_.notify_all();
}

void Engine::release_all() {
  {
    std::lock_guard lk(mu_);
    release_all_ = true;
    release_held();
  }
  work_cv_.notify_all();
}

EngineState Engine::wait() {
  std::unique_lock lk(mu_);
  idle_cv_.wait(lk, [&] { return running_ == 0 && (queue_.empty() || error_); });
  if (error_) {
    auto e = error_;
    error_ = nullptr;
    queue_.clear();
    std::rethrow_exception(e);
  }
  if (device_timed_ && timed_ < done_.size()) retime_on_device();
  if (tracker_->finished()) return EngineState::Finished;
  // Ops that become ready while released work runs are held against the budget; spend it.
  if (!held_.empty()) return EngineState::Paused;
  throw Error("plan deadlocks after " + std::to_string(tracker_->ops_done()) + " of " +
              std::to_string(plan_.ops.size()) + " ops: " + tracker_->describe_stuck());
}

std::vector<std::uint32_t> Engine::waiting_ops() {
  std::lock_guard lk(mu_);
  ensure_priority();
  sort_held();
  std::vector<std::uint32_t> out;
  for (const Task& t : held_)
    out.push_back(t.collective ? plan_.collectives[t.index].ops.front() : t.index);
  return out;
}

void Engine::sort_held() {
  std::sort(held_.begin(), held_.end(), [&](const Task& a, const Task& b) {
    const double pa = task_priority(a), pb = task_priority(b);
    return pa != pb ? pa < pb : (a.collective != b.collective ? b.collective : a.index < b.index);
  });
}

bool Engine::finished() const {
  std::lock_guard lk(mu_);
  return tracker_->finished();
}

std::size_t Engine::ops_done() const {
  std::lock_guard lk(mu_);
  return tracker_->ops_done();
}

void Engine::make_events(const Task& t, double measured_s, std::vector<Event>& out) const {
  const Timeline& tl = clock_->timeline();
  auto one = [&](std::uint32_t id) {
    out.push_back(op_event(plan_, tl, id, step_));
    out.back().value = measured_s;
  };
  if (t.collective) {
    for (std::uint32_t id : plan_.collectives[t.index].ops) one(id);
  } else {
    one(t.index);
  }
}

void Engine::retime_on_device() {
  std::vector<std::uint32_t> ids;
  for (std::size_t i = timed_; i < done_.size(); ++i) {
    const Task& t = done_[i].task;
    ids.push_back(t.collective ? plan_.collectives[t.index].ops.front() : t.index);
  }
  std::vector<double> seconds;
  runner_.device_seconds(ids, seconds);
  if (seconds.size() != ids.size()) throw Error("internal: device_seconds gave a wrong number of costs");
  for (std::size_t i = 0; i < ids.size(); ++i) done_[timed_ + i].seconds = seconds[i];
  // Completion order is an order the clock accepts, and earlier tasks keep their costs, so the
  // times already emitted do not change.
  clock_->reset();
  for (const DoneTask& d : done_) {
    clock_->complete(d.task, d.seconds);
    auto stamp = [&](std::uint32_t id) {
      OpTime& ot = clock_->timeline().ops[id];
      ot.wall_begin_ns = d.wall_begin_ns;
      ot.wall_end_ns = d.wall_end_ns;
    };
    if (d.task.collective) {
      for (std::uint32_t id : plan_.collectives[d.task.index].ops) stamp(id);
    } else {
      stamp(d.task.index);
    }
  }
  if (options_.events) {
    // No worker runs (wait() holds the lock with nothing running): lane 0 is free to use.
    std::vector<Event> events;
    for (std::size_t i = timed_; i < done_.size(); ++i) make_events(done_[i].task, done_[i].seconds, events);
    for (const Event& e : events) options_.events->push(0, e);
  }
  timed_ = done_.size();
}

Event op_event(const Plan& plan, const Timeline& tl, std::uint32_t op_id, int step) {
  const Op& op = plan.ops[op_id];
  const OpTime& ot = tl.ops[op_id];
  Event e;
  e.rank = op.rank;
  e.kind = event_kind(op.kind);
  // detail: the all-to-all phase, the collective's group, or the compute part.
  e.detail = static_cast<std::uint8_t>(op.kind == OpKind::AllToAll ? static_cast<int>(op.phase)
                                       : op.group != Group::None  ? static_cast<int>(op.group)
                                                                  : static_cast<int>(op.part));
  e.layer = static_cast<std::int16_t>(op.layer_begin);
  e.step = step;
  e.microbatch = op.microbatch;
  e.chunk = static_cast<std::int16_t>(op.chunk);
  e.peer = static_cast<std::int16_t>(op.peer);
  e.id = op.id;
  e.virtual_begin = ot.begin;
  e.virtual_end = ot.end;
  e.wall_begin_ns = ot.wall_begin_ns;
  e.wall_end_ns = ot.wall_end_ns;
  e.bytes = op.bytes;
  e.value = ot.measured_s;
  return e;
}

std::vector<Event> timeline_events(const Plan& plan, const Timeline& tl, int step) {
  std::vector<Event> out;
  out.reserve(plan.ops.size());
  for (const Op& op : plan.ops) out.push_back(op_event(plan, tl, op.id, step));
  return out;
}

void Engine::worker_main(int index) {
  std::vector<Task> ready;
  std::vector<Event> events;
  std::unique_lock lk(mu_);
  // Thread CPU costs (engine.h) read that clock only where they need it: a syscall each, two
  // an op cost the 512-rank step (120,000 ops) some 20% on these VMs. The worker keeps its CPU
  // time at a wall moment (cpu_mark at wall_mark). An op starts at the mark plus the wall time
  // since when that gap is a few microseconds of its own bookkeeping (it did not wait for work
  // or for long on the lock), else at a fresh reading. An op whose wall time is too short for a
  // preemption that matters (a frame takes milliseconds) costs that wall time; a longer one
  // reads the clock at its end.
  constexpr std::int64_t kGapNs = 10'000, kShortNs = 50'000;
  std::int64_t cpu_mark = -1, wall_mark = 0;
  for (;;) {
    if (stop_ || queue_.empty() || error_) cpu_mark = -1;  // it may sleep here
    work_cv_.wait(lk, [&] { return stop_ || (!queue_.empty() && !error_); });
    if (stop_) return;
    // Last in, first out (engine.h): on the 512-rank split the first step ran in 1.58-1.66 s
    // against 1.65-2.21 s taking the oldest, the later ones in 1.06-1.15 s against 1.12-1.41 s.
    // Virtual times, results and every rank's bytes are the same either way (each rank runs
    // its program in order); only the communication peaks, which count when a message landed
    // on the host, follow the order the workers ran in.
    const Task t = queue_.back();
    queue_.pop_back();
    ++running_;
    // Fixed already: the rank (and each collective member) is busy with t until it completes.
    const OpContext ctx{plan_, index, step_, clock_->begin_of(t), options_.events};
    lk.unlock();

    const bool cpu_costs = options_.thread_cpu_costs;
    const std::int64_t w0 = now_ns();
    const std::int64_t c0 = !cpu_costs                                 ? 0
                            : cpu_mark >= 0 && w0 - wall_mark < kGapNs ? cpu_mark + (w0 - wall_mark)
                                                                       : thread_cpu_ns();
    std::exception_ptr failed;
    try {
      if (t.collective) {
        runner_.run_collective(plan_.collectives[t.index], ctx);
      } else {
        runner_.run(plan_.ops[t.index], ctx);
      }
    } catch (...) {
      failed = std::current_exception();
    }
    const std::int64_t w1 = now_ns();
    if (cpu_costs) {
      cpu_mark = w1 - w0 < kShortNs ? c0 + (w1 - w0) : thread_cpu_ns();
      wall_mark = w1;
    }
    const double measured = static_cast<double>(cpu_costs ? std::max<std::int64_t>(0, cpu_mark - c0) : w1 - w0) * 1e-9;

    lk.lock();
    if (failed) {
      --running_;
      if (!error_) error_ = failed;
      idle_cv_.notify_all();
      continue;
    }
    clock_->complete(t, measured);
    auto stamp = [&](std::uint32_t id) {
      OpTime& ot = clock_->timeline().ops[id];
      ot.wall_begin_ns = w0 - epoch_ns_;
      ot.wall_end_ns = w1 - epoch_ns_;
    };
    if (t.collective) {
      for (std::uint32_t id : plan_.collectives[t.index].ops) stamp(id);
    } else {
      stamp(t.index);
    }
    if (device_timed_)  // op events wait for the device's costs (retime_on_device)
      done_.push_back({t, measured, w0 - epoch_ns_, w1 - epoch_ns_});
    else if (options_.events)
      make_events(t, measured, events);
    tracker_->complete(t, ready);
    const std::size_t before = queue_.size();
    enqueue_ready(ready);
    const std::size_t added = queue_.size() - before;
    // This worker takes one of the new tasks itself on its next turn; wake others only for
    // the rest (waking a sleeper per op costs more than an empty op).
    for (std::size_t i = 1; i < added; ++i) work_cv_.notify_one();
    if (!events.empty()) {
      // Still counted as running, so begin() cannot reset under us; the ring never blocks.
      lk.unlock();
      for (const Event& e : events) options_.events->push(static_cast<std::size_t>(index), e);
      events.clear();
      lk.lock();
    }
    --running_;
    // wait() also returns on an error with tasks still queued (no worker takes them then).
    if (running_ == 0 && (queue_.empty() || error_)) idle_cv_.notify_all();
  }
}

}  // namespace onegpu::trainer
