#pragma once
// The story model's first step on one GPU, as a recorded run: a one-rank ParallelTrainer stepped
// layer by layer (op_per_layer, one worker, so its ops finish in the order they ran) on the
// trays' four texts, its engine's events and the step's once-a-step records fed to a RunState
// exactly as the Lab's live run feeds its own. The learning chapters (6-9) read the step there:
// the ops with their spans, the activation level after each, the head's guess after
// "Once upon a" (the probes look at that position), each layer's gradient norm, how far the
// update moved each layer. A second step on the same texts is recorded after it: its head's
// probes are the guess with the updated weights.
//
//   const FirstStepRun* r = first_step_run_ready(1);   // draw(): null until recorded (a job)
//   FirstStepView v = view(*r, ops_run);                // what had happened after ops_run ops
//
// One thing a picture shows is not an event: chapter 8's loupe, sixteen of layer 2's weights
// before and after the update (loupe_before / loupe_after), read from the trainer's master
// weights around the recorded step.
//
// Chapters 11-12's time bar (and chapter 15's comparison with it) reads the same kind of record
// for a step split into four microbatches (one per text): each op's fastest of three measured
// steps after a warm-up (step_reader.h's fastest_of), replayed into a RunState.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app/live/run_state.h"

namespace onegpu::app {

struct FirstStepRun {
  std::shared_ptr<const LiveRun> run;  // the one-rank run's plan, model and tokenizer
  RunState state;                      // step 0 (the first step) and step 1 (the same texts again)
  int microbatches = 1;
  std::array<float, 16> loupe_before{}, loupe_after{};  // not events: see above

  const RunStep& first() const;   // step 0
  const RunStep& second() const;  // step 1
  int ops() const { return static_cast<int>(first().ops.size()); }
};

// The head's guess for the token after the prompt, from NextToken and Target probes.
struct HeadGuess {
  std::vector<std::pair<std::int64_t, double>> top;  // token id, probability; likeliest first
  std::int64_t target = -1;                           // the token the text really has next
  double p_target = 0;
  double error() const;                               // -log p(target)
  bool empty() const { return top.empty(); }
};

// What the first step had done once its first `ran` ops (in the order they ran) had.
struct FirstStepView {
  int ran = 0;
  const OpSpan* last = nullptr;         // the last op run (null: none yet)
  std::int64_t activations = 0;         // activation bytes after it
  std::vector<double> layer_grads;      // per layer: its gradient norm so far (0: no backward yet)
  std::vector<int> backward_done;       // per microbatch: layers whose backward has run
  std::vector<int> forward_done;        // per microbatch: layers whose forward has run
  bool updated = false;                 // the update has run
  HeadGuess guess;                      // microbatch 0's guess, once its head has run; the
                                        // updated weights' guess once the update has
};
FirstStepView view(const FirstStepRun& r, int ran);

// The head's guess of a step's microbatch (-1: any) from its probes.
HeadGuess head_guess(const RunStep& s, int microbatch = 0);

// The first step with the trays' batch split into `microbatches`, recorded by a job on the app's
// job runner (queued on first ask). _ready: null until recorded (draw()); the other waits
// (prepare(), tests; never from a job).
const FirstStepRun* first_step_run_ready(int microbatches = 1);
const FirstStepRun& first_step_run(int microbatches = 1);

// A step of the one-rank run with one text per microbatch (four), timed as the fastest of three
// measured steps after a warm-up and recorded like the pipeline chapters' steps.
const RunState* warm_step_ready();
const RunState& warm_step();
// Per text (microbatch) the step's compute time on the virtual clock, then the update's; seconds.
struct StepTimes {
  std::vector<double> per_text;
  double update = 0;
  double total() const;
};
StepTimes step_times(const RunStep& s);

// A status-bar line while one of these recordings is queued or runs (empty otherwise).
std::string first_step_activity();

}  // namespace onegpu::app
