#pragma once
// A plan's step on the virtual clock alone, each compute op given its cost: the engine's rules
// for when ops begin and end, without running any maths. The chapters use it to re-time a real
// step with each op's fastest measured cost, so one hiccup of a busy machine does not show as
// a pipeline bubble.
#include <vector>

#include "trainer/engine/virtual_clock.h"
#include "trainer/plan/plan.h"

namespace onegpu::trainer {

// op_seconds: one compute cost per op, by op id (collectives take their time from `cost`).
// Throws Error when the sizes differ or the plan cannot finish.
Timeline replay_on_clock(const Plan& plan, const CostModel& cost, const std::vector<double>& op_seconds);

}  // namespace onegpu::trainer
