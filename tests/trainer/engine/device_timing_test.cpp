// A runner that times its ops on a device (OpRunner::device_timed, as the CUDA backend's ranks
// do with CUDA events) hands the engine its costs after the work is done: the virtual clock and
// the op events must then follow those costs, not the engine's wall clock, free-running and
// paced alike. Here the "device" is a table of made-up costs, so it runs on any machine.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "trainer/engine/engine.h"
#include "trainer/engine/replay.h"

namespace onegpu::trainer {
namespace {

// Each compute op "took" (1 + op id % 7) ms on the device; the host part takes no time.
double device_cost(std::uint32_t id) { return 1e-3 * (1 + id % 7); }

struct DeviceTimed final : OpRunner {
  const Plan& plan;
  std::mutex mu;
  int asked = 0;                  // device_seconds calls
  std::vector<std::uint32_t> seen;  // every op id asked about
  explicit DeviceTimed(const Plan& p) : plan(p) {}
  void run(const Op&, const OpContext&) override {}
  bool device_timed() const override { return true; }
  void device_seconds(const std::vector<std::uint32_t>& ids, std::vector<double>& s) override {
    std::lock_guard lk(mu);
    ++asked;
    s.clear();
    for (std::uint32_t id : ids) {
      seen.push_back(id);
      s.push_back(plan.op(id).is_compute() ? device_cost(id) : 0.0);
    }
  }
};

RunConfig pipeline() {
  RunConfig c;
  c.schedule = Schedule::OneFOneB;
  c.pp = 2;
  c.dp = 2;
  c.microbatches = 4;
  c.layers = 4;
  return c;
}

std::vector<double> device_costs(const Plan& plan) {
  std::vector<double> s(plan.ops.size(), 0.0);
  for (const Op& op : plan.ops) s[op.id] = op.is_compute() ? device_cost(op.id) : 0.0;
  return s;
}

TEST(DeviceTiming, FreeRunningStepTakesTheDeviceCosts) {
  const Plan plan = compile_plan(pipeline());
  DeviceTimed runner(plan);
  EventStream events(2);
  EngineOptions o;
  o.workers = 2;
  o.events = &events;
  Engine engine(plan, runner, o);
  const Timeline tl = engine.run();
  const Timeline want = replay_on_clock(plan, o.cost, device_costs(plan));
  ASSERT_EQ(tl.ops.size(), want.ops.size());
  for (std::size_t i = 0; i < tl.ops.size(); ++i) {
    EXPECT_DOUBLE_EQ(tl.ops[i].begin, want.ops[i].begin) << describe(plan.ops[i]);
    EXPECT_DOUBLE_EQ(tl.ops[i].end, want.ops[i].end) << describe(plan.ops[i]);
    EXPECT_GE(tl.ops[i].wall_end_ns, tl.ops[i].wall_begin_ns);
  }
  EXPECT_DOUBLE_EQ(tl.end, want.end);
  EXPECT_EQ(runner.asked, 1);  // once, at the end of the step
  // Every task asked about once, and each op's event carries its device cost and times.
  EXPECT_EQ(runner.seen.size(), plan.ops.size() - [&] {
    std::size_t extra = 0;
    for (const Collective& c : plan.collectives) extra += c.ops.size() - 1;
    return extra;
  }());
  std::map<std::uint32_t, Event> by_op;
  events.drain([&](const Event& e) {
    if (e.kind != EventKind::MemoryLevel && e.kind != EventKind::Loss && e.kind != EventKind::Probe) by_op[e.id] = e;
  });
  ASSERT_EQ(by_op.size(), plan.ops.size());
  for (const Op& op : plan.ops) {
    const Event& e = by_op.at(op.id);
    EXPECT_DOUBLE_EQ(e.virtual_begin, want.ops[op.id].begin);
    EXPECT_DOUBLE_EQ(e.virtual_end, want.ops[op.id].end);
    if (op.is_compute()) {
      EXPECT_DOUBLE_EQ(e.value, device_cost(op.id));
    }
  }
}

TEST(DeviceTiming, PacedStepAsksAtEachPauseAndEndsTheSame) {
  const Plan plan = compile_plan(pipeline());
  DeviceTimed runner(plan);
  EngineOptions o;
  o.workers = 2;
  Engine engine(plan, runner, o);
  engine.begin(0);
  int pauses = 0;
  while (engine.step_one() == EngineState::Paused) ++pauses;
  const Timeline want = replay_on_clock(plan, o.cost, device_costs(plan));
  for (std::size_t i = 0; i < want.ops.size(); ++i)
    EXPECT_DOUBLE_EQ(engine.timeline().ops[i].end, want.ops[i].end) << describe(plan.ops[i]);
  EXPECT_GT(pauses, 10);
  EXPECT_GE(runner.asked, pauses);  // costs come at every pause, not only at the end
}

TEST(DeviceTiming, WallTimedRunnersAreNotAsked) {
  const Plan plan = compile_plan(pipeline());
  NullRunner runner;
  EXPECT_FALSE(runner.device_timed());
  Engine engine(plan, runner, EngineOptions{.workers = 2});
  const Timeline tl = engine.run();
  EXPECT_GT(tl.end, 0.0);
}

}  // namespace
}  // namespace onegpu::trainer
