#pragma once
// The copy of the model onto a second GPU, as the parallel engine really does it: a dp=2 run
// whose second rank starts with every weight at zero, and whose first step opens with one
// broadcast per layer from GPU 1. Recorded as events (app/run/recorded_run.h), the broadcasts
// read from rank 0's spans; then checked bit for bit (a read of the trainer, not an event).
#include <cstdint>
#include <string>
#include <vector>

#include "app/live/run_state.h"

namespace onegpu::app {

struct CopyFacts {
  std::vector<int> layers;        // the layer each broadcast carried, in the order they ran
  bool second_empty_before = false;  // GPU 2's weights were all zero before the copy
  bool equal_after = false;          // after the first step (the broadcasts, then one shared update) GPU 2's weights equal GPU 1's
  std::int64_t bytes = 0;            // weights copied (fp32 master values)
};

// The broadcasts of a recorded first step (rank 0's Broadcast spans, in the order they ran).
CopyFacts read_copy(const RunStep& first);

// Made once by a job on the app's job runner (app/run/posted.h): the _ready version queues it
// and returns null until it is made (draw()); the other queues it and waits (prepare(), tests).
const CopyFacts* story_model_copy_ready();
const CopyFacts& story_model_copy();
std::string story_model_copy_activity();  // status-bar line while it is queued or runs
// How many broadcasts the copy takes, from the run's first-step plan alone (nothing runs): for
// the chapter's length, which must not wait for the copy.
int story_model_copy_broadcasts();

}  // namespace onegpu::app
