#pragma once
// "What if" two data-parallel copies never compared notes: two copies of the fresh story model,
// identical to the bit, each trained on its own half of the first step's texts with no
// gradient averaging. Their gradients differ, and after the update so do their weights. Each
// copy is a recorded one-rank run (app/run/recorded_run.h); its gradient norms are its probes.
#include <string>
#include <vector>

#include "app/live/run_state.h"

namespace onegpu::app {

struct DriftFacts {
  std::vector<double> grad_norm[2];  // per layer, each copy's gradient norm before its update
  bool equal_before = false;         // the two copies start identical
  // Not from events (no rank sees the other's weights): ||w1 - w2|| / ||w1|| after each of a
  // few lone steps, from the two trainers.
  std::vector<double> rel_diff;
};

// A recorded step's per-layer gradient norms (its LayerGradNorm probes; the last per layer).
std::vector<double> layer_grads(const RunStep& s, int layers);

// Three lone steps. Made once by a job on the app's job runner (app/run/posted.h): the _ready
// version queues it and returns null until it is made (draw()); the other waits (prepare(), tests).
const DriftFacts* story_drift_ready();
const DriftFacts& story_drift();
std::string story_drift_activity();  // status-bar line while it is queued or runs

}  // namespace onegpu::app
