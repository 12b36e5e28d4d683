#pragma once
// One real training step of the 8-layer story model cut into two pipeline stages (pp=2), each
// stage on two GPUs that share its experts (dp=2, ep=2), as chapters 21-23 draw it: four ranks,
// rank = stage·2 + gpu. What the pictures need is read from the engine's virtual clock (when
// each compute op of each rank ran, when activations were handed up and gradients handed down)
// and from each rank's allocator (the bytes it holds).
#include <cstdint>
#include <vector>

#include "app/run/step_reader.h"

namespace onegpu::app {

// The real step: story8, pp=2 dp=2 ep=2, 1F1B (GPipe for one microbatch: the same order), a
// global batch of 8 texts, each GPU's four cut into `microbatches` (1, 2 or 4). After a
// warm-up, kMeasuredSteps steps run; each op costs the fastest of its measured times (a busy
// machine only ever adds time: fastest_of()) and the step is replayed on the virtual clock with
// those costs. Its loss is the first measured step's. Cached per microbatch count.
inline constexpr int kMeasuredSteps = 5;
const PipelineStep& story_pipeline_step(int microbatches);
// Starts measuring the 1, 2 and 4-microbatch steps on a background thread (once), so chapters 22
// and 23 find them ready; a call to story_pipeline_step meanwhile waits for that step only.
void warm_story_pipeline_steps();

// Bytes a rank of that run holds (weights, gradients, optimizer state) right after it is built.
const std::vector<std::int64_t>& story_pipeline_held_bytes();

}  // namespace onegpu::app
