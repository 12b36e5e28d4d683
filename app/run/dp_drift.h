#pragma once
// "What if" two data-parallel copies never compared notes: two copies of the fresh story model,
// identical to the bit, each trained on its own half of the first step's texts with no
// gradient averaging. Their gradients differ, and after the update so do their weights.
#include <string>
#include <vector>

namespace onegpu::app {

struct DriftFacts {
  std::vector<double> grad_norm[2];  // per layer, each copy's gradient norm before its update
  bool equal_before = false;         // the two copies start identical
  std::vector<double> rel_diff;      // ||w1 - w2|| / ||w1|| after each of a few lone steps
};

// Three lone steps. Made once by a job on the app's job runner (app/run/posted.h): the _ready
// version queues it and returns null until it is made (draw()); the other waits (prepare(), tests).
const DriftFacts* story_drift_ready();
const DriftFacts& story_drift();
std::string story_drift_activity();  // status-bar line while it is queued or runs

}  // namespace onegpu::app
