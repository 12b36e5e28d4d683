#pragma once
// The engine: runs a plan's per-rank programs on a small pool of worker threads. Virtual ranks
// are not threads: any worker runs any rank's next ready op (dependency rules in tracker.h),
// so 512 ranks run on 2 cores. The maths is not here: an OpRunner does each op's work.
//
//   struct MyRunner : OpRunner { void run(const Op&, const OpContext&) override {...} };
//   Engine engine(plan, runner);            // one worker per core
//   const Timeline& t = engine.run();       // free-running: the whole step
//
// Paced / by hand: begin(), then release_ops(1) / release_microbatches(k) / release_all(),
// and wait() until the released work is done (wait() says Paused or Finished).
// Collectives run once, on one worker, after every member has arrived, with members in rank
// order, so a runner that reduces in that order is bitwise reproducible.
// Each op's wall time (its thread's CPU time with EngineOptions::thread_cpu_costs; for a
// device-timed runner, its device time) is measured and fed to
// the virtual clock (virtual_clock.h); every
// completed op becomes an Event in the worker's own ring when an EventStream is attached
// (Event::value = measured seconds, Event::id = op id).
//
// What a runner may rely on:
//   - ops of one rank never run at the same time and run in program order, so per-rank
//     state needs no lock; a collective runs while all its member ranks wait at it;
//   - a Recv runs after its Send has returned, and what the Send wrote is visible to it (the
//     engine's lock orders them). Sends are eager: the sender moves on, so the runner must
//     copy the data into a buffer of its own (a mailbox keyed by the send's op id);
//   - any worker may run any rank's op: model state belongs to ranks, never to threads;
//     scratch that serves one thread at a time (a compute backend, temporary buffers) can be
//     kept per worker, indexed by OpContext::worker (0..workers()-1).
// A runner that throws stops the step; run() / wait() rethrow the first exception, and the
// next run() / begin() starts the step afresh. tests/trainer/engine/toy_runner_test.cpp is a complete
// runner (integer "maths") showing all of this, checked for parity across every split.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "trainer/engine/dependency_tracker.h"
#include "trainer/engine/virtual_clock.h"
#include "trainer/events/event_stream.h"
#include "trainer/plan/plan.h"

namespace onegpu::trainer {

struct OpContext {
  const Plan& plan;
  int worker = 0;                 // 0..workers-1, the thread running the op
  int step = 0;
  double virtual_begin = 0;       // when the op begins on the virtual clock (its end is not
                                  // known until its cost is measured)
  EventStream* events = nullptr;  // the engine's stream, if any

  // Pushes a runner's own event (loss, memory level, probe) into this worker's ring, the
  // one lane this thread may write. Never blocks; false if it was dropped (and counted).
  bool emit(const Event& e) const {
    return events ? events->push(static_cast<std::size_t>(worker), e) : false;
  }
};

class OpRunner {
 public:
  virtual ~OpRunner() = default;
  // Compute, Send, Recv, Update. A Send runs before its Recv; the runner carries the data.
  virtual void run(const Op& op, const OpContext& ctx) = 0;
  // AllReduce, AllToAll, Broadcast: called once when all members have arrived.
  virtual void run_collective(const Collective& c, const OpContext& ctx) {
    (void)c;
    (void)ctx;
  }
  // A runner whose ops only queue work on a device (a GPU) says so here: the engine's wall
  // clock then sees the queueing, not the work. The engine asks device_seconds for the costs of
  // the tasks done since it last asked (first op id of each; collectives too) once the released
  // work is done (the end of a step, each paced pause), re-times the virtual clock with them and
  // only then emits the op events. During a step, OpContext::virtual_begin still comes from
  // wall costs (the runner's own events carry those).
  virtual bool device_timed() const { return false; }
  // Called with no op running (it may wait for the device); one cost per op id, in order.
  virtual void device_seconds(const std::vector<std::uint32_t>& op_ids, std::vector<double>& seconds) {
    seconds.assign(op_ids.size(), 0.0);
  }
};

// Does nothing: for measuring the engine itself and for tests of order.
struct NullRunner final : OpRunner {
  void run(const Op&, const OpContext&) override {}
};

struct EngineOptions {
  int workers = 0;                 // 0: one per hardware thread
  CostModel cost = CostModel{};    // virtual clock (measured compute by default)
  EventStream* events = nullptr;   // needs at least `workers` producers; lane = worker index
  int step = 0;                    // step number put on events
  // Measured compute is the CPU time of the worker's thread while it ran the op, not the wall
  // time: a worker the system preempts (a window drawing on the same cores) is not charged the
  // time it waited. The clock is a syscall (about 1.2 us here), read only for ops of 50 us and
  // more and after a worker waited (engine.cpp); shorter ops cost their wall time. The app's
  // runs turn it on; `onegpu train` and its traces keep wall time. Ops must run on the calling
  // thread alone (every rank's CPU backend does); the wall stamps are kept either way.
  bool thread_cpu_costs = false;
};

enum class EngineState { Paused, Finished };

// The events the engine would emit for ops of a timeline: for drawing a plan that was only
// simulated (no maths run). One per op, in op id order; collectives give one per member.
Event op_event(const Plan& plan, const Timeline& tl, std::uint32_t op_id, int step);
std::vector<Event> timeline_events(const Plan& plan, const Timeline& tl, int step);

class Engine {
 public:
  Engine(const Plan& plan, OpRunner& runner, EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  int workers() const { return static_cast<int>(threads_.size()); }

  // Free-running: runs the whole plan once (one step) and returns its timeline.
  // Throws Error if the plan deadlocks; rethrows an exception from the runner.
  const Timeline& run();

  // Paced. begin() resets to the start of a step with nothing released.
  void begin(int step);
  void begin() { begin(options_.step); }
  void release_ops(int n = 1);           // n more ops (tasks), earliest in planned time first
  void release_microbatches(int count);  // everything of microbatches < count
  void release_all();
  // Blocks until nothing released is left to run. Throws as run() does.
  EngineState wait();
  // By hand: release one op and wait for it.
  EngineState step_one() {
    release_ops(1);
    return wait();
  }

  // Paced: ops ready but not yet released, earliest in planned time first (a collective
  // is listed by its first member). release_ops(1) runs the first one. For "next:" labels.
  std::vector<std::uint32_t> waiting_ops();

  bool finished() const;
  std::size_t ops_done() const;
  // Virtual and wall times of the ops done so far (all, once finished).
  const Timeline& timeline() const { return clock_->timeline(); }

 private:
  void worker_main(int index);
  bool passes_gate(const Task& t) const;
  void enqueue_ready(std::vector<Task>& ready);  // under mu_
  void release_held();                           // under mu_
  int task_microbatch(const Task& t) const;
  OpKind task_kind(const Task& t) const;
  double task_priority(const Task& t) const;
  void make_events(const Task& t, double measured_s, std::vector<Event>& out) const;  // under mu_
  // Device-timed runners: tasks in completion order with their costs and wall stamps, and how
  // many of them have their device costs already.
  struct DoneTask {
    Task task;
    double seconds = 0;
    std::int64_t wall_begin_ns = 0, wall_end_ns = 0;
  };
  bool device_timed_ = false;
  std::vector<DoneTask> done_;
  std::size_t timed_ = 0;
  void retime_on_device();  // under mu_, nothing running

  const Plan& plan_;
  OpRunner& runner_;
  EngineOptions options_;
  std::vector<double> priority_;  // planned virtual begin per op (unit costs): by-hand order
  void ensure_priority();  // under mu_
  void sort_held();        // under mu_: by planned begin

  mutable std::mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  // Ready tasks, taken from the back: a worker runs what the op it just finished made ready
  // (depth first), so the activation it wrote is read while still in the cache and the blocks
  // it freed are taken again, where taking from the front ran every replica's microbatch up
  // the stages side by side and held all their activations at once (engine.cpp says more).
  std::vector<Task> queue_;
  std::vector<Task> held_;  // ready but not released (paced)
  std::vector<Task> scratch_;
  std::unique_ptr<DependencyTracker> tracker_;
  std::unique_ptr<VirtualClock> clock_;
  int running_ = 0;
  bool stop_ = false;
  bool release_all_ = false;
  int mb_released_ = 0;
  long budget_ = 0;
  int step_ = 0;
  std::exception_ptr error_;
  std::int64_t epoch_ns_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace onegpu::trainer
