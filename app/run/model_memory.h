#pragma once
// Bytes the trainer really allocates for the story model, measured by building its parameter
// store under a fresh tracking allocator: one count per layer depth, so each slab that drops
// into the picture raises the walls by what that layer actually costs.
#include <cstdint>
#include <string>
#include <vector>

#include "app/live/run_state.h"

namespace onegpu::trainer {
class MemoryTracker;
class ParallelTrainer;
}  // namespace onegpu::trainer

namespace onegpu::app {

// What a rank holds for the whole run, from its allocator: weights + gradients + optimizer
// state (activations come and go within a step and are not counted).
std::int64_t held_bytes(const trainer::MemoryTracker& t);
// The same from a run state's record of a rank's memory.
std::int64_t held_bytes(const RankMemory& m);
// The same for every rank of a parallel run, by rank.
std::vector<std::int64_t> held_bytes_per_rank(const trainer::ParallelTrainer& t);

struct ModelBytes {
  int layers = 0;
  std::int64_t params = 0;
  std::int64_t weights = 0, gradients = 0, optimizer = 0;  // from the allocator
  std::int64_t total() const { return weights + gradients + optimizer; }
};

// Story-model stores with 1..max_layers layers (index i holds i+1 layers). Cached.
const std::vector<ModelBytes>& story_model_bytes(int max_layers = 8);

// What one of two data-parallel GPUs holds (weights + gradients + optimizer state, from that
// rank's allocator, as the recorded runs' StepMemory events report it) with every expert on both
// (ep=1) and with the experts split (ep=2).
struct SplitBytes {
  std::int64_t replicated = 0, split = 0;
};
// Made once by a job on the app's job runner (app/run/posted.h): the _ready version queues it
// and returns null until it is made (draw()); the other waits (prepare(), tests).
const SplitBytes* story_expert_split_bytes_ready();
const SplitBytes& story_expert_split_bytes();
std::string story_expert_split_bytes_activity();

// The toy GPU's memory: a round number of MiB that puts the 4-layer model (weights, gradients,
// optimizer state) just under the top tick.
std::int64_t toy_capacity_bytes();

}  // namespace onegpu::app
