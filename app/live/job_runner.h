#pragma once
// The job runner: the one owner of background work in app/. It holds the live run (a
// ParallelTrainer of any configuration, its engine's events attached) and one thread that
// carries out commands from a queue, in order:
//
//   JobRunner& jr = JobRunner::shared();
//   jr.configure(args);          // build a run (the previous one stays if this one cannot be split)
//   jr.play();                   // free-running; play(4) runs four ops a second
//   jr.pause(); jr.step_op(); jr.step_microbatch(); jr.step_whole(); jr.reset();
//   auto run = jr.live();        // plans and the event stream, for the run state (run_state.h)
//
// Nothing else in app/ starts a thread or trains: the chapters' recorded runs are posted here
// too (post()), and run between the live run's ops.
// The engine's workers write op events into their own lanes of the run's EventStream; the
// runner's own lane (index LiveRun::workers) carries what exists only once a step is finished:
// StepEnd, GradNorm, per-rank memory (StepMemory), RouterCount and Traffic.
// The trainer never blocks on the picture; the runner itself waits for room in its own lane
// (it is not a compute worker), so once-a-step records are never dropped.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "app/cli/train_command.h"
#include "trainer/data/bpe_tokenizer.h"
#include "trainer/events/event_stream.h"
#include "trainer/model/config.h"
#include "trainer/plan/plan.h"

namespace onegpu::app {

// What the run state needs to know of a live run, fixed when it is built.
struct LiveRun {
  std::uint64_t generation = 0;  // one per configure / reset
  cli::TrainArgs args;
  trainer::ModelConfig model;
  std::shared_ptr<const trainer::Plan> first_plan;   // step 0 (with the weights' broadcast), or null
  std::shared_ptr<const trainer::Plan> steady_plan;  // every other step
  std::shared_ptr<trainer::EventStream> events;
  int workers = 0;                 // engine lanes 0..workers-1; lane `workers` is the runner's
  int seq = 0;                     // tokens per text
  bool by_layer = false;           // one op per layer (one rank): the learner's view
  std::shared_ptr<const trainer::BpeTokenizer> tokenizer;  // to show probe tokens as text
  std::string recorded_from;       // a run read back from this file (trace_run.h), not live
  std::int64_t tokens_per_step = 0;
  const trainer::Plan& plan_of(int step) const {
    if (!first_plan_steps.empty()) {  // a recorded run says which steps had the first plan
      for (int s : first_plan_steps)
        if (s == step) return *first_plan;
      return *steady_plan;
    }
    return step == 0 && first_plan ? *first_plan : *steady_plan;
  }
  std::vector<int> first_plan_steps;  // recorded runs only (see plan_of)
  const trainer::RunConfig& config() const { return steady_plan->config; }
  int world() const { return steady_plan->world(); }
};

// A step of the live run run again under another split ("branch this step"): the same
// model, seed and data, the run carried on under the other split from the live run's newest
// state kept at or before the step (or from step 1 where none is) up to the branch step, whose
// events (the engine's own, plus the once-a-step records) are kept for a run state of its own.
// The weights at the branch point are compared by fingerprint.
struct BranchRun {
  std::shared_ptr<const LiveRun> run;  // the other split (no event stream)
  std::vector<trainer::Event> events;  // the branch step's events
  int step = 0;                        // the branch step (as op events number it, from 0)
  std::uint64_t live_generation = 0;   // the live run it branched from
  std::uint64_t weights_before = 0;    // fingerprint of the weights the step began from (0: not taken)
  int first = 0;                       // the first step it trained: the live run's state was taken before it
};

// The step a branch of `step` trains first (from 0): the newest of the live run's kept states
// at or before it (RunnerStatus::kept_states), else 0, the seed's. The runner branches from it;
// the Compare pane says so before the press.
inline int branch_first_step(const std::vector<int>& kept_states, int step) {
  int first = 0;
  for (int k : kept_states)
    if (k <= step) first = k;
  return first;
}

enum class RunMode { Paused, Free, Paced };

struct RunnerStatus {
  std::uint64_t generation = 0;
  RunMode mode = RunMode::Paused;
  double ops_per_second = 0;  // Paced
  bool building = false;      // a configuration is being built
  std::string building_what;
  std::string error;          // why the last command failed ("" if it did not)
  int steps_done = 0;         // whole steps finished
  bool in_step = false;       // a step is begun and not finished
  std::size_t ops_done = 0;   // engine tasks done in the current step
  int microbatches_released = 0;
  std::int64_t next_op = -1;  // the op "step one op" runs next (-1: the next step's first)
  std::string job;            // a posted job running now ("" if none)
  std::vector<int> kept_states;  // steps (from 0) before which the live run's state is kept, oldest first: a branch starts there
  std::size_t queued = 0;     // commands not yet carried out
  bool working = false;       // a command is being carried out now: when it ends, the picture changes
};

class JobRunner {
 public:
  JobRunner();
  ~JobRunner();
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // The app's one runner (created on first use, stopped at exit).
  static JobRunner& shared();

  // Empty when `a` can be split, else the one line `onegpu train` prints for it.
  static std::string check(const cli::TrainArgs& a);

  // ---- commands: queued, carried out in order on the runner's thread ----
  // A new run from step 0; a bad one leaves the old. ring_capacity: events per worker lane
  // (the default holds several steps of 512 ranks between two frames; tests make it tiny).
  void configure(const cli::TrainArgs& a, std::size_t ring_capacity = std::size_t{1} << 16);
  void play(double ops_per_second = 0);      // 0: as fast as it goes
  void pause();                              // stops between two ops
  void step_op();                            // exactly the next op of the by-hand order
  void step_microbatch();                    // everything of the next microbatch
  void step_whole();                         // the rest of this step (or one whole step)
  void reset();                              // same configuration, back to step 0
  // Runs step `step` (from 0; it must be finished in the live run) again under the split of
  // `other` (its dp, ep, pp, vstages, microbatches, schedule, link); the rest of the live
  // run's configuration is kept. The result is branch() once done; the live run is untouched.
  void branch(const cli::TrainArgs& other, int step);
  // Any thread: the branches asked for so far stop (before their next step) or never start;
  // the branch shown before them stays. A branch trains every step from the state it starts
  // from (the seed's, for a step before any state was kept).
  void cancel_branch();

  // Any thread: background work for the chapters, run on the runner's thread between ops.
  std::shared_future<void> post(std::string what, std::function<void()> job);
  // Posted jobs run at the idle scheduling class (SCHED_IDLE: only on a core nothing else
  // wants) instead of nice 10, while other processes leave the cores alone (where they keep
  // every core busy, an idle-class job would barely run, so it keeps nice 10). The window turns
  // this on: at nice 10 a chapter's background run still held a core for part of a frame while
  // the rasteriser's threads waited for it. Off by default (tests run side by side).
  void set_jobs_idle_class(bool on);

  RunnerStatus status() const;
  std::shared_ptr<const LiveRun> live() const;  // null before the first configure
  std::shared_ptr<const BranchRun> branched() const;  // the last branch done (null: none)

  // Blocks until every command queued so far is carried out and the run is paused (or a
  // play() is going on: then it returns as soon as the queue is empty). `pump` is called
  // every couple of milliseconds meanwhile: drain the events there, or a long command waits
  // for room in its lane.
  void wait_idle(const std::function<void()>& pump = {});
  // Like wait_idle, for a free run: until `steps` whole steps are done (or a command fails).
  void wait_steps(int steps, const std::function<void()>& pump = {});

 private:
  struct Command;
  struct Live;
  void thread_main();
  void push(Command c);
  void carry_out(Command& c);
  void quantum();  // one slice of play
  void do_configure(const cli::TrainArgs& a, std::size_t ring_capacity);
  void do_branch(const cli::TrainArgs& other, int step, std::uint64_t serial);
  void ensure_step();
  void keep_state();  // before a step: the run's state, kept for branches (Live::states)
  void after_ops();  // finishes the step if its last op ran
  void finish_step(bool by_hand);
  void emit(const trainer::Event& e);  // the runner's lane; waits for room
  void publish_status();

  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<Command> queue_;
  RunnerStatus status_;
  std::shared_ptr<const LiveRun> live_;
  std::shared_ptr<const BranchRun> branch_;
  bool stop_ = false;
  bool busy_ = false;  // a command is being carried out

  // Runner thread only.
  std::unique_ptr<Live> run_;
  RunMode mode_ = RunMode::Paused;
  double pace_ = 0;
  bool by_hand_ = false;  // the current step had an op released by hand
  std::uint64_t generation_ = 0;
  std::atomic<bool> jobs_idle_class_{false};
  std::atomic<std::uint64_t> branches_asked_{0}, branches_cancelled_{0};  // branch() calls; those cancel_branch() covers
  std::thread thread_;  // last: it starts at construction and reads the members above
};

}  // namespace onegpu::app
