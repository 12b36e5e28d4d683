#pragma once
// How long the timeline's axis is while it follows a running step.
#include <deque>

#include "app/live/run_state.h"

namespace onegpu::app {

// The length (seconds, on the wall or the virtual clock) of the last step before `step` in the
// run's history, or `otherwise` when there is none: a new step's axis starts on it (lab_timeline.cpp).
double step_before(const std::deque<StepLine>& history, int step, bool wall, double otherwise);

}  // namespace onegpu::app
