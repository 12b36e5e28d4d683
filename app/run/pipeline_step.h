#pragma once
// One real training step of the 8-layer story model cut into two pipeline stages (pp=2), each
// stage on two GPUs that share its experts (dp=2, ep=2), as chapters 21-23 draw it: four ranks,
// rank = stage·2 + gpu. What the pictures need is read from the engine's virtual clock (when
// each compute op of each rank ran, when activations were handed up and gradients handed down)
// and from each rank's allocator (the bytes it holds).
#include <cstdint>
#include <string>
#include <vector>

#include "app/run/step_reader.h"

namespace onegpu::app {

// The real step: story8, pp=2 dp=2 ep=2, 1F1B (GPipe for one microbatch: the same order), a
// global batch of 8 texts, each GPU's four cut into `microbatches` (1, 2 or 4). After a
// warm-up, kMeasuredSteps steps run; each op costs the fastest of its measured times (a busy
// machine only ever adds time: fastest_of()) and the step is replayed on the virtual clock with
// those costs. The replay's events feed the recorded run's RunState (record_step()), and the
// step is read from its RunStep. Its loss is the first measured step's. Cached per
// microbatch count.
inline constexpr int kMeasuredSteps = 5;
// Each is made once by a job on the app's job runner. The _ready versions queue it if needed
// and return null until it is made (draw() uses them: it never waits for training); the others
// queue it and wait (headless prepare(), tests; they throw Error if the job failed).
const PipelineStep* story_pipeline_step_ready(int microbatches);
const PipelineStep& story_pipeline_step(int microbatches);
// The recorded run's state the step was read from (waits like story_pipeline_step()).
const RunState& story_pipeline_run_state(int microbatches);
// Queues the held bytes and the 1, 2 and 4-microbatch steps, in that order, so chapters 22 and
// 23 find them ready.
void warm_story_pipeline_steps();

// Bytes a rank of that run holds (weights, gradients, optimizer state) right after it is built.
const std::vector<std::int64_t>* story_pipeline_held_bytes_ready();
const std::vector<std::int64_t>& story_pipeline_held_bytes();

// A line for the status bar while one of these jobs is queued or running, or why one failed
// (empty otherwise).
std::string story_pipeline_activity();

}  // namespace onegpu::app
