// The job runner: commands carried out in order on its one thread, the by-hand rules (one op
// per press, in the engine's by-hand order; a microbatch; a whole step), bitwise parity of a
// step finished by hand with the same step run free, and a bad configuration that leaves the
// running one untouched.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <cmath>
#include <cstdio>
#include <thread>
#include <tuple>

#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>
#endif

#include "app/live/job_runner.h"
#include "app/live/run_state.h"

namespace onegpu::app {
namespace {

cli::TrainArgs split(int dp, int ep, int pp, int microbatches) {
  cli::TrainArgs a;
  a.model = "story";
  a.dp = dp;
  a.ep = ep;
  a.pp = pp;
  a.microbatches = microbatches;
  a.batch = 4;
  a.seq = 16;
  a.workers = 2;
  a.steps = 10;
  return a;
}

struct Watched {
  JobRunner jr;
  RunState rs;
  void pump() {
    auto live = jr.live();
    if (live && live->generation != rs.generation()) rs.attach(live);
    rs.drain();
  }
  void settle() {
    jr.wait_idle([this] { pump(); });
    pump();
  }
};

TEST(JobRunner, BadConfigurationKeepsTheRunningOne) {
  Watched w;
  w.jr.configure(split(2, 2, 2, 2));
  w.settle();
  ASSERT_TRUE(w.jr.status().error.empty()) << w.jr.status().error;
  const auto before = w.jr.live();
  ASSERT_NE(before, nullptr);
  w.jr.configure(split(2, 3, 1, 1));  // ep must divide dp
  w.settle();
  EXPECT_NE(w.jr.status().error.find("ep must divide dp"), std::string::npos) << w.jr.status().error;
  EXPECT_EQ(JobRunner::check(split(2, 3, 1, 1)), w.jr.status().error) << "the same line the CLI prints";
  EXPECT_EQ(w.jr.live(), before) << "the running configuration stays";
  w.jr.step_whole();
  w.settle();
  EXPECT_EQ(w.jr.status().steps_done, 1) << "and still steps";
  EXPECT_TRUE(w.jr.status().error.empty());
}

TEST(JobRunner, OneOpPerPressInTheEnginesOrder) {
  Watched w;
  w.jr.configure(split(1, 1, 2, 2));
  w.settle();
  const trainer::Plan& plan = w.jr.live()->plan_of(0);
  // The first press begins the step; before it, nothing is predicted.
  w.jr.step_op();
  w.settle();
  std::size_t done = w.jr.status().ops_done;
  ASSERT_EQ(done, 1u);
  int presses = 1;
  while (w.jr.status().in_step) {
    const RunnerStatus st = w.jr.status();
    ASSERT_GE(st.next_op, 0);
    const std::size_t spans_before = w.rs.latest()->ops.size();
    w.jr.step_op();
    w.settle();
    ++presses;
    const RunStep& s = *w.rs.find(0);
    if (!w.jr.status().in_step) break;
    EXPECT_EQ(w.jr.status().ops_done, st.ops_done + 1) << "exactly one task per press";
    // The op the status named is the one that ran (a collective: all its members).
    ASSERT_GT(s.ops.size(), spans_before);
    EXPECT_EQ(s.ops[spans_before].id, (std::uint32_t)st.next_op) << trainer::describe(plan.op((std::uint32_t)st.next_op));
  }
  const RunStep* s = w.rs.find(0);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->complete);
  EXPECT_TRUE(s->by_hand);
  EXPECT_EQ(s->ops.size(), plan.ops.size());
  EXPECT_GT(presses, 10);
}

// The same two steps, once by hand (op by op, then microbatch by microbatch) and once free.
TEST(JobRunner, StepsByHandAreBitwiseTheFreeSteps) {
  Watched hand, free;
  hand.jr.configure(split(2, 2, 2, 2));
  free.jr.configure(split(2, 2, 2, 2));
  hand.settle();
  free.settle();
  for (int i = 0; i < 1000 && hand.jr.status().steps_done < 1; ++i) {
    hand.jr.step_op();
    hand.settle();
  }
  for (int i = 0; i < 10 && hand.jr.status().steps_done < 2; ++i) {
    hand.jr.step_microbatch();
    hand.settle();
  }
  ASSERT_EQ(hand.jr.status().steps_done, 2);
  free.jr.play();
  free.jr.wait_steps(2, [&] { free.pump(); });
  free.jr.pause();
  free.settle();
  ASSERT_GE(free.jr.status().steps_done, 2);
  for (int step = 0; step < 2; ++step) {
    const RunStep* a = hand.rs.find(step);
    const RunStep* b = free.rs.find(step);
    ASSERT_TRUE(a && b && a->complete && b->complete);
    EXPECT_TRUE(a->by_hand);
    EXPECT_FALSE(b->by_hand);
    // A step taken by hand waited for its learner: it shows no speed; a free step does.
    EXPECT_TRUE(std::isnan(a->tokens_per_s));
    EXPECT_GT(b->tokens_per_s, 0);
    EXPECT_EQ(a->loss, b->loss) << "step " << step;
    EXPECT_EQ(a->grad_norm, b->grad_norm);
    ASSERT_NE(a->weights_fingerprint, 0u);
    EXPECT_EQ(a->weights_fingerprint, b->weights_fingerprint) << "the weights, bit for bit";
    EXPECT_EQ(a->router, b->router);
  }
  EXPECT_NE(hand.rs.find(0)->weights_fingerprint, hand.rs.find(1)->weights_fingerprint) << "an update moves them";
}

// A branch of a late step trains every step before it again (minutes at step 10,000, the live
// run held meanwhile): cancel_branch stops it, keeps no result and leaves no error, and covers
// only the branches asked for before it.
TEST(JobRunner, ABranchCanBeCancelled) {
  Watched w;
  w.jr.configure(split(1, 1, 1, 1));
  for (int i = 0; i < 3; ++i) w.jr.step_whole();
  w.settle();
  ASSERT_TRUE(w.jr.status().error.empty()) << w.jr.status().error;
  w.jr.branch(split(1, 1, 1, 1), 2);
  w.jr.cancel_branch();
  w.settle();
  EXPECT_EQ(w.jr.branched(), nullptr) << "cancelled: nothing kept";
  EXPECT_EQ(w.jr.status().job, "");
  EXPECT_EQ(w.jr.status().error, "");
  w.jr.branch(split(1, 1, 1, 1), 2);
  w.settle();
  ASSERT_NE(w.jr.branched(), nullptr) << "a branch asked for after the cancel runs";
  EXPECT_EQ(w.jr.branched()->step, 2);
}

// A branch starts from the live run's newest state kept at or before its step (keep_state)
// instead of training every step from the first again: under the live run's own split it ends
// the step with the live loss bit for bit, and from the state kept just before the step it began
// from the live run's very weights. A new run keeps none of the old run's states.
TEST(JobRunner, ABranchStartsFromTheLiveRunsKeptState) {
  Watched w;
  w.jr.configure(split(2, 2, 1, 1));
  for (int i = 0; i < 4; ++i) w.jr.step_whole();
  w.settle();
  ASSERT_TRUE(w.jr.status().error.empty()) << w.jr.status().error;
  const std::vector<int> kept = w.jr.status().kept_states;
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept.front(), 1) << "the first is taken before the second step (the first starts from the seed)";
  for (std::size_t i = 1; i < kept.size(); ++i) EXPECT_LT(kept[i - 1], kept[i]);
  EXPECT_LE(kept.back(), 3);
  auto loss_of = [](const BranchRun& b) {
    for (const trainer::Event& e : b.events)
      if (e.kind == trainer::EventKind::StepEnd) return e.value;
    return -1.0;
  };
  for (int step : {3, 1}) {
    w.jr.branch(split(2, 2, 1, 1), step);
    w.settle();
    ASSERT_TRUE(w.jr.status().error.empty()) << w.jr.status().error;
    const auto b = w.jr.branched();
    ASSERT_NE(b, nullptr);
    ASSERT_EQ(b->step, step);
    int newest = 0;
    for (int k : kept)
      if (k <= step) newest = k;
    EXPECT_EQ(b->first, newest) << "step " << step;
    const RunStep* live = w.rs.find(step);
    ASSERT_NE(live, nullptr);
    EXPECT_EQ(loss_of(*b), live->loss) << "step " << step << ": the same split from the same state";
  }
  const RunStep* before = w.rs.find(0);  // step 1's state is always kept: the weights after step 0
  ASSERT_NE(before, nullptr);
  ASSERT_NE(before->weights_fingerprint, 0u);
  EXPECT_EQ(w.jr.branched()->weights_before, before->weights_fingerprint);
  w.jr.reset();
  w.settle();
  EXPECT_TRUE(w.jr.status().kept_states.empty()) << "the run from step 0 has none yet";
}

// In a free run the states are paced by what a copy into kept arrays costs, not by the first
// copies into new ones (a 64-GPU scale run's first state took so long that a run of half a
// minute kept no second one): the ring fills on the steps after the first.
TEST(JobRunner, AFreeRunFillsItsKeptStatesFirst) {
  Watched w;
  w.jr.configure(split(2, 2, 1, 1));
  w.settle();
  w.jr.play(0);
  for (int i = 0; i < 2000 && w.jr.status().steps_done < 12; ++i) {
    w.pump();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  w.jr.pause();
  w.settle();
  ASSERT_TRUE(w.jr.status().error.empty()) << w.jr.status().error;
  ASSERT_GE(w.jr.status().steps_done, 12);
  const std::vector<int> kept = w.jr.status().kept_states;
  // Eight states of the story model fit in 128 MB; paced by the first copies, a dozen steps of
  // a few milliseconds kept one or two.
  EXPECT_EQ(kept.size(), 8u);
}

TEST(JobRunner, StepsCarryMemoryRouterAndTraffic) {
  Watched w;
  w.jr.configure(split(2, 2, 1, 1));
  w.settle();
  w.jr.step_whole();
  w.settle();
  const RunStep* s = w.rs.last_complete();
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->memory.size(), 2u);
  for (const RankMemory& m : s->memory) {
    EXPECT_GT(m.current[0], 0) << "weights";
    EXPECT_GT(m.current[2], 0) << "optimizer state";
    EXPECT_GE(m.peak[3], m.current[3]);
  }
  // Every token of every layer picks top-k experts: the counts add up to tokens × k.
  const auto& mc = w.jr.live()->model;
  for (int l = 0; l < mc.n_layers; ++l) {
    std::int64_t sum = 0;
    for (int e = 0; e < mc.n_experts; ++e) sum += s->router[(std::size_t)(l * mc.n_experts + e)];
    EXPECT_EQ(sum, 4 * 16 * mc.top_k) << "layer " << l;
  }
  ASSERT_FALSE(s->traffic.empty());
  for (const TrafficRow& t : s->traffic) EXPECT_NE(t.from, t.to);
  EXPECT_GT(s->tokens_per_s, 0);
  EXPECT_TRUE(std::isfinite(s->loss));
  EXPECT_GT(s->grad_norm, 0);
}

TEST(JobRunner, PostedJobsRunOnTheRunnersThread) {
  JobRunner jr;
  std::thread::id ran;
  auto f = jr.post("test job", [&] { ran = std::this_thread::get_id(); });
  f.wait();
  EXPECT_NE(ran, std::this_thread::get_id());
  auto g = jr.post("failing job", [] { throw std::runtime_error("boom"); });
  EXPECT_THROW(g.get(), std::runtime_error);
}

// The window sleeps while nothing moves; it must know a command is still being carried out, or
// it sleeps through the end of a by-hand "One step" and shows the step before it.
TEST(JobRunner, StatusSaysWhileACommandIsCarriedOut) {
  Watched w;
  w.jr.configure(split(2, 1, 1, 1));
  w.settle();
  EXPECT_FALSE(w.jr.status().working);
  std::promise<void> go;
  std::shared_future<void> gate = go.get_future().share();
  std::atomic<bool> started{false};
  auto f = w.jr.post("held", [&] {
    started = true;
    gate.wait();
  });
  w.jr.step_whole();  // queued behind the held job
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  RunnerStatus st = w.jr.status();
  EXPECT_TRUE(st.working);
  EXPECT_EQ(st.steps_done, 0);
  go.set_value();
  f.wait();
  w.settle();
  st = w.jr.status();
  EXPECT_FALSE(st.working);
  EXPECT_EQ(st.queued, 0u);
  EXPECT_EQ(st.steps_done, 1);  // what the window draws once the runner is idle again
  EXPECT_FALSE(st.in_step);
}

#if defined(__linux__)
// A job gives way to the picture: nice 10 by default; with the idle class on, SCHED_IDLE while
// the machine is otherwise quiet, else still nice 10 (never the normal priority, and it runs).
TEST(JobRunner, PostedJobsRunBelowThePicture) {
  JobRunner jr;
  auto job_class = [&] {
    int policy = -1, nice = 0;
    jr.post("priority probe", [&] {
        policy = sched_getscheduler(0);
        nice = getpriority(PRIO_PROCESS, 0);
      }).get();
    return std::pair{policy, nice};
  };
  auto [policy, nice] = job_class();
  EXPECT_EQ(policy, SCHED_OTHER);
  EXPECT_EQ(nice, 10);
  jr.set_jobs_idle_class(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a sample of the machine's load
  std::tie(policy, nice) = job_class();
  EXPECT_TRUE(policy == SCHED_IDLE || (policy == SCHED_OTHER && nice == 10)) << policy << " " << nice;
  std::printf("with the idle class on, a job ran at %s\n", policy == SCHED_IDLE ? "SCHED_IDLE" : "nice 10 (machine busy)");
}
#endif

}  // namespace
}  // namespace onegpu::app
