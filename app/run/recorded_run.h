#pragma once
// A chapter's run, recorded: a ParallelTrainer built here with an event stream attached and
// stepped on a given batch, every step's events (the engine's own, then the once-a-step records
// the job runner adds to the live run: app/live/step_records.h) fed to a RunState through
// consume(), as the Lab's drained events are. Chapters read the steps from the state, never the
// trainer.
//
//   RecordedRun r = record_run(model, options, data, batch, 4);
//   const RunStep* s = r.state.find(1);
//
// `look` is called before the first step (step -1) and after each, with the trainer: for the
// few facts a picture shows that are not events (say which where it is used).
#include <functional>
#include <memory>

#include "app/live/run_state.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::app {

struct RecordedRun {
  std::shared_ptr<const LiveRun> run;  // plans, model, sizes (no event stream)
  RunState state;                      // at most RunState::kFullSteps steps are kept whole
};

// The recorded run's LiveRun for a model and options (plans compiled from them).
std::shared_ptr<const LiveRun> recorded_live_run(const trainer::ModelConfig& model, const trainer::ParallelOptions& o);

RecordedRun record_run(const trainer::ModelConfig& model, trainer::ParallelOptions o, const trainer::TokenDataset& data,
                       const trainer::Batch& batch, int steps,
                       const std::function<void(int step, const trainer::ParallelTrainer&)>& look = {});

}  // namespace onegpu::app
