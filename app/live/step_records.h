#pragma once
// What a finished step reports once, after its ops, as events on the runner's lane: the
// gradient norm, each rank's memory, the routers' counts, the all-to-all rows, the learning
// rate; and, for a one-rank run stepped layer by layer, how far the update moved each layer.
// The live run (job_runner.cpp), a branch, and the chapters' recorded runs (app/run/first_step.h)
// all send the same records, so a run state cannot tell them apart.
#include <cstdint>
#include <vector>

#include "trainer/events/event.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::app {

std::vector<trainer::Event> step_records(const trainer::ParallelStepResult& r, int step, int experts);

// UpdateSize probes: per layer, then the whole model (layer -1), |w_after - w_before| / |w_before|
// over the master weights of a one-rank run.
std::vector<trainer::Event> update_size_records(const trainer::ParamStore& after, const std::vector<float>& before,
                                                int n_layers, int step);

// What every rank holds before its first step (weights, gradients, optimizer state), as
// StepMemory events of step -1: the run state's resident() memory.
std::vector<trainer::Event> resident_records(const trainer::ParallelTrainer& t);

// FNV-1a over the weights' bytes (ProbeKind::WeightsFingerprint).
std::uint64_t fingerprint(const std::vector<float>& w);

}  // namespace onegpu::app
