#include "trainer/engine/replay.h"

#include <utility>

#include "trainer/engine/dependency_tracker.h"
#include "trainer/error.h"

namespace onegpu::trainer {

Timeline replay_on_clock(const Plan& plan, const CostModel& cost, const std::vector<double>& op_seconds) {
  if (op_seconds.size() != plan.ops.size()) throw Error("replay: one cost per op is needed");
  DependencyTracker tracker(plan);
  VirtualClock clock(plan, cost);
  std::vector<Task> ready, next;
  tracker.start(ready);
  while (!ready.empty()) {
    next.clear();
    for (const Task& t : ready) {
      clock.complete(t, t.collective ? 0.0 : op_seconds[t.index]);
      tracker.complete(t, next);
    }
    std::swap(ready, next);
  }
  if (!tracker.finished()) throw Error("replay: the plan deadlocks: " + tracker.describe_stuck());
  return clock.timeline();
}

}  // namespace onegpu::trainer
