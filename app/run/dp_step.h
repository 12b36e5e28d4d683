#pragma once
// One step of the story model on one GPU and on two data-parallel GPUs, on the same four texts,
// run by the parallel engine and recorded as events: the virtual clock's times for the
// pictures' time bars, read from the spans of a step replayed with each op's fastest of three
// measured costs (after a warm-up; step_reader.h's fastest_of, as chapter 11's step is timed),
// the loss each reports, and whether the two copies are still bit-for-bit the same after the
// updates (that one is not an event: the trainer compares them).
#include <string>

#include "app/live/run_state.h"

namespace onegpu::app {

struct DpStepFacts {
  double one_gpu_s = 0.0;         // whole step on one GPU (virtual clock, measured compute)
  double two_compute_s = 0.0;     // GPU 1's forward and backward with two GPUs
  double two_wait_s = 0.0;        // GPU 1 waiting for GPU 2 to reach the all-reduce
  double two_allreduce_s = 0.0;   // the gradient all-reduce
  double two_update_s = 0.0;
  double two_total_s = 0.0;       // the dp=2 step end to end
  double loss_one = 0.0, loss_two = 0.0;
  bool replicas_equal = false;    // checked after the update
  int allreduce_ops = 0;          // all-reduce calls the plan made (one per gradient group)
};

// The facts of a step on one GPU and the same step on two, from their recorded spans (rank 0's).
DpStepFacts read_dp_step(const RunStep& one, const RunStep& two);

// Both recorded runs (each one step: the replayed one), and the facts read from them.
struct RecordedDpSteps {
  RunState one, two;
  bool replicas_equal = false;
  DpStepFacts facts;
};

// Made once by a job on the app's job runner (app/run/posted.h): the _ready version queues it
// and returns null until it is made (draw()); the other queues it and waits (prepare(), tests).
const DpStepFacts* story_dp_step_ready();
const DpStepFacts& story_dp_step();
const RecordedDpSteps& story_dp_steps();  // waits, like story_dp_step()
std::string story_dp_step_activity();  // status-bar line while it is queued or runs

}  // namespace onegpu::app
