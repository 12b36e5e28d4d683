#include <gtest/gtest.h>

#include <limits>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "trainer/engine/engine.h"
#include "trainer/error.h"

namespace onegpu::trainer {
namespace {

RunConfig cfg(Schedule s, int pp, int dp, int ep, int m, int v = 1) {
  RunConfig c;
  c.schedule = s;
  c.pp = pp;
  c.dp = dp;
  c.ep = ep;
  c.microbatches = m;
  c.vstages = v;
  c.layers = pp * v * 2;
  return c;
}

// Records the order ops ran in and checks each dependency at the moment an op runs.
struct Recorder final : OpRunner {
  const Plan& plan;
  std::mutex mu;
  std::vector<std::uint8_t> done;
  std::vector<std::size_t> next;  // per rank: index into its program
  std::vector<std::uint32_t> order;
  std::vector<std::string> errors;
  std::set<int> workers;
  int collectives = 0;

  explicit Recorder(const Plan& p)
      : plan(p), done(p.ops.size(), 0), next(p.programs.size(), 0) {}

  void check(const Op& op) {  // under mu
    const auto& prog = plan.programs[static_cast<std::size_t>(op.rank)];
    auto& n = next[static_cast<std::size_t>(op.rank)];
    if (n >= prog.size() || prog[n] != op.id) errors.push_back(describe(op) + " out of order");
    ++n;
    if (op.kind == OpKind::Recv && !done[static_cast<std::size_t>(op.match)])
      errors.push_back(describe(op) + " before its send");
    done[op.id] = 1;
    order.push_back(op.id);
  }
  void run(const Op& op, const OpContext& ctx) override {
    std::lock_guard lk(mu);
    workers.insert(ctx.worker);
    check(op);
  }
  void run_collective(const Collective& c, const OpContext& ctx) override {
    std::lock_guard lk(mu);
    workers.insert(ctx.worker);
    ++collectives;
    for (std::size_t i = 0; i + 1 < c.ranks.size(); ++i)
      if (c.ranks[i] >= c.ranks[i + 1]) errors.push_back("collective members not in rank order");
    for (auto id : c.ops) check(plan.op(id));
  }
};

TEST(Engine, RunsEveryOpInDependencyOrder) {
  for (Schedule s : {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved,
                     Schedule::ZeroBubbleH1})
    for (auto [pp, dp, ep] : {std::tuple{1, 2, 1}, {1, 2, 2}, {2, 2, 2}, {4, 4, 2}}) {
      RunConfig c = cfg(s, pp, dp, ep, 4, s == Schedule::Interleaved ? 2 : 1);
      const Plan plan = compile_plan(c, PlanOptions{.broadcast_model = true});
      Recorder rec(plan);
      Engine engine(plan, rec, EngineOptions{.workers = 2});
      engine.run();
      EXPECT_TRUE(engine.finished());
      EXPECT_EQ(rec.order.size(), plan.ops.size());
      EXPECT_EQ(rec.collectives, static_cast<int>(plan.collectives.size()));
      EXPECT_TRUE(rec.errors.empty()) << rec.errors.front();
    }
}

TEST(Engine, UnitVirtualClockEqualsTheSimulation) {
  // Whatever order the workers happen to run ops in, virtual times depend only on the plan.
  RunConfig c = cfg(Schedule::OneFOneB, 4, 2, 2, 8);
  const Plan plan = compile_plan(c);
  CostModel model = CostModel::for_link("pcie");
  model.compute = ComputeCost::Unit;
  const Timeline sim = simulate(plan, model);
  NullRunner null;
  Engine engine(plan, null, EngineOptions{.workers = 3, .cost = model});
  const Timeline& tl = engine.run();
  for (std::size_t i = 0; i < plan.ops.size(); ++i) {
    EXPECT_DOUBLE_EQ(tl.ops[i].begin, sim.ops[i].begin) << describe(plan.ops[i]);
    EXPECT_DOUBLE_EQ(tl.ops[i].end, sim.ops[i].end) << describe(plan.ops[i]);
    EXPECT_LE(tl.ops[i].wall_begin_ns, tl.ops[i].wall_end_ns);
  }
  const Summary s = summarize(plan, tl);
  EXPECT_GT(s.stage_idle[0], 3.0 / 11);  // PCIe hand-overs add to the textbook bubble
}

TEST(Engine, MeasuredCostsDriveTheVirtualClock) {
  struct Busy final : OpRunner {
    void run(const Op& op, const OpContext&) override {
      if (!op.is_compute()) return;
      volatile double x = 0;
      for (int i = 0; i < 20000; ++i) x = x + i * 0.5;
    }
  } busy;
  const Plan plan = compile_plan(cfg(Schedule::GPipe, 2, 1, 1, 2));
  CostModel model;
  model.free_comm = true;
  Engine engine(plan, busy, EngineOptions{.workers = 2, .cost = model});
  const Timeline& tl = engine.run();
  for (const Op& op : plan.ops) {
    const OpTime& t = tl.ops[op.id];
    if (op.is_compute() && op.kind != OpKind::Update) {
      EXPECT_GT(t.measured_s, 0.0);
      // end = begin + measured on the clock; taking begin away again rounds at begin's scale.
      EXPECT_NEAR(t.end - t.begin, t.measured_s, 4 * std::numeric_limits<double>::epsilon() * t.end);
    }
  }
}

// An op whose thread is off the core for part of it (here it sleeps; in the app, a window
// drawing preempts it) is charged that time on the wall clock, and not with thread CPU costs.
TEST(Engine, ThreadCpuCostsLeaveOutTimeTheWorkerWasOffTheCore) {
  struct Sleepy final : OpRunner {
    void run(const Op& op, const OpContext&) override {
      if (op.is_compute()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } sleepy;
  const Plan plan = compile_plan(cfg(Schedule::GPipe, 2, 1, 1, 1));
  CostModel model;
  model.free_comm = true;
  for (bool cpu : {false, true}) {
    Engine engine(plan, sleepy, EngineOptions{.workers = 2, .cost = model, .thread_cpu_costs = cpu});
    const Timeline& tl = engine.run();
    int computes = 0;
    for (const Op& op : plan.ops) {
      if (!op.is_compute() || op.kind == OpKind::Update) continue;
      ++computes;
      const OpTime& t = tl.ops[op.id];
      if (cpu)
        EXPECT_LT(t.measured_s, 0.005) << describe(op);  // a sleep costs the thread next to nothing
      else
        EXPECT_GE(t.measured_s, 0.019) << describe(op);
      // The wall stamps still say when the op ran, sleep and all.
      EXPECT_GE(t.wall_end_ns - t.wall_begin_ns, 19'000'000) << describe(op);
    }
    EXPECT_GT(computes, 0);
  }
  // Ops that work, short and long (some read the clock, others cost their wall time): each costs
  // something, and no more than the wall time it took.
  struct Busy final : OpRunner {
    void run(const Op& op, const OpContext&) override {
      if (!op.is_compute()) return;
      volatile double x = 0;
      const int n = op.rank == 0 ? 2'000 : 400'000;
      for (int i = 0; i < n; ++i) x = x + i * 0.5;
    }
  } busy;
  Engine engine(plan, busy, EngineOptions{.workers = 2, .cost = model, .thread_cpu_costs = true});
  const Timeline& tl = engine.run();
  for (const Op& op : plan.ops) {
    if (!op.is_compute() || op.kind == OpKind::Update) continue;
    const OpTime& t = tl.ops[op.id];
    EXPECT_GT(t.measured_s, 0.0) << describe(op);
    // (the end reading comes a syscall after the wall stamp: some microseconds here)
    EXPECT_LE(t.measured_s, (t.wall_end_ns - t.wall_begin_ns) * 1e-9 + 20e-6) << describe(op);
  }
}

TEST(Engine, MissingSendIsReportedNotHung) {
  Plan plan = compile_plan(cfg(Schedule::OneFOneB, 2, 1, 1, 2));
  for (Op& o : plan.ops)
    if (o.kind == OpKind::Recv && o.payload == Payload::Activation) {
      plan.ops[static_cast<std::size_t>(o.match)].match = -1;
      o.match = -1;
      break;
    }
  NullRunner null;
  Engine engine(plan, null, EngineOptions{.workers = 2});
  try {
    engine.run();
    FAIL() << "deadlock not detected";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("plan deadlocks"), std::string::npos) << w;
    EXPECT_NE(w.find("rank 1 waits at recv act c1 L2-3 mb0 from 0 @r1 (no matching send)"),
              std::string::npos)
        << w;
  }
}

TEST(Engine, CrossedReceivesAreReportedNotHung) {
  // Rank 0 waits for the gradient before sending the activation that produces it: a cycle,
  // every op present.
  Plan plan = compile_plan(cfg(Schedule::GPipe, 2, 1, 1, 1));
  auto& prog0 = plan.programs[0];  // F, send act, recv grad, B, update
  ASSERT_EQ(plan.op(prog0[1]).kind, OpKind::Send);
  ASSERT_EQ(plan.op(prog0[2]).kind, OpKind::Recv);
  std::swap(prog0[1], prog0[2]);
  check_plan(plan);  // structurally fine
  NullRunner null;
  Engine engine(plan, null, EngineOptions{.workers = 2});
  EXPECT_THROW(engine.run(), Error);
}

TEST(Engine, RunnerErrorsComeBack) {
  struct Failing final : OpRunner {
    std::atomic<bool> armed{true};
    void run(const Op& op, const OpContext&) override {
      if (armed && op.kind == OpKind::Backward) throw std::runtime_error("nan in backward");
    }
  } failing;
  const Plan plan = compile_plan(cfg(Schedule::OneFOneB, 2, 2, 1, 2));
  Engine engine(plan, failing, EngineOptions{.workers = 2});
  EXPECT_THROW(
      {
        try {
          engine.run();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "nan in backward");
          throw;
        }
      },
      std::runtime_error);
  // The same engine starts the step afresh after an error.
  failing.armed = false;
  const Timeline& tl = engine.run();
  EXPECT_TRUE(engine.finished());
  EXPECT_EQ(engine.ops_done(), plan.ops.size());
  for (const Op& op : plan.ops) EXPECT_LE(tl.ops[op.id].begin, tl.ops[op.id].end);
}

TEST(Engine, PacedByMicrobatch) {
  const Plan plan = compile_plan(cfg(Schedule::GPipe, 2, 2, 1, 3));
  Recorder rec(plan);
  Engine engine(plan, rec, EngineOptions{.workers = 2});
  engine.begin();
  EXPECT_EQ(engine.wait(), EngineState::Paused);
  EXPECT_EQ(engine.ops_done(), 0u);
  engine.release_microbatches(1);
  EXPECT_EQ(engine.wait(), EngineState::Paused);
  // GPipe: microbatch 0 goes up and, on the last stage, comes back; nothing of mb 1 ran.
  std::size_t mb0 = 0;
  for (auto id : rec.order) {
    EXPECT_EQ(plan.op(id).microbatch, 0) << describe(plan.op(id));
    ++mb0;
  }
  EXPECT_GT(mb0, 0u);
  engine.release_microbatches(2);
  EXPECT_EQ(engine.wait(), EngineState::Paused);
  for (auto id : rec.order) EXPECT_LT(plan.op(id).microbatch, 2);
  engine.release_all();
  EXPECT_EQ(engine.wait(), EngineState::Finished);
  EXPECT_EQ(rec.order.size(), plan.ops.size());
  EXPECT_TRUE(rec.errors.empty());
}

TEST(Engine, ByHandOneOpAtATime) {
  const Plan plan = compile_plan(cfg(Schedule::OneFOneB, 2, 2, 2, 2));
  Recorder rec(plan);
  Engine engine(plan, rec, EngineOptions{.workers = 2});
  engine.begin();
  std::size_t presses = 0, last = 0;
  std::size_t tasks = plan.ops.size();
  for (const Collective& c : plan.collectives) tasks -= c.ops.size() - 1;
  while (true) {
    const std::vector<std::uint32_t> next = engine.waiting_ops();
    if (engine.step_one() == EngineState::Finished) break;
    ++presses;
    ASSERT_FALSE(next.empty());
    // The op announced as next is the one that ran.
    EXPECT_NE(std::find(rec.order.begin() + static_cast<long>(last), rec.order.end(), next.front()),
              rec.order.end())
        << describe(plan.op(next.front()));
    ASSERT_LE(presses, tasks);
    // Exactly one task per press: one op, or one collective's members.
    const std::size_t ran = rec.order.size() - last;
    ASSERT_GE(ran, 1u);
    if (ran > 1) {
      EXPECT_GE(plan.op(rec.order.back()).collective, 0);
    }
    last = rec.order.size();
  }
  EXPECT_EQ(presses + 1, tasks);
  EXPECT_TRUE(rec.errors.empty());
  // Planned time decides: the first op is a forward on the first stage.
  EXPECT_EQ(plan.op(rec.order.front()).kind, OpKind::Forward);
  EXPECT_EQ(plan.op(rec.order.front()).stage, 0);
}

TEST(Engine, EventsForEveryOp) {
  const Plan plan = compile_plan(cfg(Schedule::ZeroBubbleH1, 2, 2, 2, 2));
  EventStream stream(2, 1u << 12);
  NullRunner null;
  Engine engine(plan, null, EngineOptions{.workers = 2, .events = &stream, .step = 7});
  engine.run();
  std::vector<int> seen(plan.ops.size(), 0);
  std::set<EventKind> kinds;
  stream.drain([&](const Event& e) {
    ASSERT_LT(e.id, plan.ops.size());
    ++seen[e.id];
    kinds.insert(e.kind);
    EXPECT_EQ(e.rank, plan.op(e.id).rank);
    EXPECT_EQ(e.step, 7);
    EXPECT_LE(e.virtual_begin, e.virtual_end);
  });
  EXPECT_EQ(stream.dropped(), 0u);
  for (int n : seen) EXPECT_EQ(n, 1);
  EXPECT_TRUE(kinds.count(EventKind::WeightGradient));
  EXPECT_TRUE(kinds.count(EventKind::AllToAll));
  EXPECT_TRUE(kinds.count(EventKind::Send));
  EXPECT_TRUE(kinds.count(EventKind::AllReduce));
  EXPECT_THROW(Engine(plan, null, EngineOptions{.workers = 3, .events = &stream}), Error);
}

TEST(Engine, RunnersEmitTheirOwnEventsAtTheOpsVirtualTime) {
  struct Lossy final : OpRunner {
    std::vector<double> begins = std::vector<double>(64, -1);
    std::mutex mu;
    void run(const Op& op, const OpContext& ctx) override {
      {
        std::lock_guard lk(mu);
        begins[op.id] = ctx.virtual_begin;
      }
      if (op.kind != OpKind::Forward || op.chunk != ctx.plan.config.chunks() - 1) return;
      Event e;
      e.kind = EventKind::Loss;
      e.rank = op.rank;
      e.microbatch = op.microbatch;
      e.virtual_begin = ctx.virtual_begin;
      e.value = 2.0 + op.microbatch;
      EXPECT_TRUE(ctx.emit(e));
    }
  } lossy;
  const Plan plan = compile_plan(cfg(Schedule::OneFOneB, 2, 1, 1, 3));
  ASSERT_LE(plan.ops.size(), 64u);
  EventStream stream(2);
  Engine engine(plan, lossy, EngineOptions{.workers = 2, .cost = CostModel::unit(), .events = &stream});
  const Timeline& tl = engine.run();
  for (const Op& op : plan.ops) {
    if (op.collective < 0) {
      EXPECT_DOUBLE_EQ(lossy.begins[op.id], tl.ops[op.id].begin) << describe(op);
    }
  }
  std::vector<double> losses;
  stream.drain([&](const Event& e) {
    if (e.kind == EventKind::Loss) {
      losses.push_back(e.value);
      EXPECT_DOUBLE_EQ(e.virtual_begin, 1.0 + 3.0 * e.microbatch);  // 1F1B, F=1, B=2, p=2
    }
  });
  std::sort(losses.begin(), losses.end());
  EXPECT_EQ(losses, (std::vector<double>{2, 3, 4}));
}

TEST(Engine, SimulatedTimelineAsEvents) {
  const Plan plan = compile_plan(cfg(Schedule::OneFOneB, 2, 2, 2, 2));
  const Timeline tl = simulate(plan, CostModel::unit());
  const std::vector<Event> ev = timeline_events(plan, tl, 3);
  ASSERT_EQ(ev.size(), plan.ops.size());
  for (const Op& op : plan.ops) {
    const Event& e = ev[op.id];
    EXPECT_EQ(e.rank, op.rank);
    EXPECT_EQ(e.step, 3);
    EXPECT_EQ(e.microbatch, op.microbatch);
    EXPECT_DOUBLE_EQ(e.virtual_end, tl.ops[op.id].end);
    if (op.kind == OpKind::AllToAll) {
      EXPECT_EQ(e.kind, EventKind::AllToAll);
      EXPECT_EQ(e.detail, static_cast<int>(op.phase));
    }
    if (op.kind == OpKind::Backward) {
      EXPECT_EQ(e.kind, EventKind::Backward);
    }
  }
}

TEST(Engine, RunsAgainForTheNextStep) {
  const Plan plan = compile_plan(cfg(Schedule::Interleaved, 2, 2, 1, 4, 2));
  Recorder rec(plan);
  Engine engine(plan, rec, EngineOptions{.workers = 2, .cost = CostModel::unit()});
  const double first = engine.run().end;
  rec.next.assign(plan.programs.size(), 0);
  rec.done.assign(plan.ops.size(), 0);
  const double second = engine.run().end;
  EXPECT_EQ(first, second);
  EXPECT_EQ(rec.order.size(), 2 * plan.ops.size());
  EXPECT_TRUE(rec.errors.empty());
}

TEST(Engine, FiveHundredTwelveRanksOnTwoWorkers) {
  RunConfig c = cfg(Schedule::OneFOneB, 8, 64, 8, 8);
  c.layers = 32;
  c.experts = 64;
  const Plan plan = compile_plan(c);
  std::atomic<std::size_t> ran{0};
  struct Count final : OpRunner {
    std::atomic<std::size_t>& n;
    explicit Count(std::atomic<std::size_t>& x) : n(x) {}
    void run(const Op&, const OpContext&) override { n.fetch_add(1, std::memory_order_relaxed); }
    void run_collective(const Collective& col, const OpContext&) override {
      n.fetch_add(col.ops.size(), std::memory_order_relaxed);
    }
  } count(ran);
  Engine engine(plan, count, EngineOptions{.workers = 2, .cost = CostModel::unit()});
  const Timeline& tl = engine.run();
  EXPECT_EQ(ran.load(), plan.ops.size());
  const Summary s = summarize(plan, tl);
  EXPECT_EQ(s.rank_idle.size(), 512u);
  EXPECT_NEAR(s.stage_idle[0], 7.0 / 15, 1e-9);  // (p-1)/(m+p-1) with p = m = 8
}

// One op throws while another worker is still finishing ops that make more ready: the step
// must end with the error, never wait forever (it did, about one run in six, when the last
// running op left tasks queued behind the error). Many tries, each under a watchdog.
struct ThrowsOnce final : OpRunner {
  std::uint32_t bad;
  explicit ThrowsOnce(std::uint32_t b) : bad(b) {}
  void run(const Op& op, const OpContext&) override {
    if (op.id == bad) throw Error("op " + std::to_string(op.id) + " failed");
    volatile double x = 0;  // a little work, so the other worker is busy when the error lands
    for (int i = 0; i < 2000; ++i) x = x + i;
  }
};

TEST(Engine, AnOpThatThrowsEndsTheStepWhileOthersStillRun) {
  const Plan plan = compile_plan(cfg(Schedule::OneFOneB, 2, 4, 1, 4));
  for (int attempt = 0; attempt < 200; ++attempt) {
    ThrowsOnce runner((std::uint32_t)(attempt * 7 % plan.ops.size()));
    Engine engine(plan, runner, EngineOptions{.workers = 2});
    auto done = std::async(std::launch::async, [&] {
      for (int step = 0; step < 2; ++step) {
        try {
          engine.run();
        } catch (const Error&) {
        }
      }
    });
    if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      ADD_FAILURE() << "the engine hung after op " << runner.bad << " threw (attempt " << attempt << ")";
      std::_Exit(1);  // a hung engine cannot be joined: end the test binary with the failure
    }
  }
}

}  // namespace
}  // namespace onegpu::trainer
