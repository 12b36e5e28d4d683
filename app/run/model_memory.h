#pragma once
// Bytes the trainer really allocates for the story model, measured by building its parameter
// store under a fresh tracking allocator: one count per layer depth, so each slab that drops
// into the picture raises the walls by what that layer actually costs.
#include <cstdint>
#include <vector>

namespace onegpu::app {

struct ModelBytes {
  int layers = 0;
  std::int64_t params = 0;
  std::int64_t weights = 0, gradients = 0, optimizer = 0;  // from the allocator
  std::int64_t total() const { return weights + gradients + optimizer; }
};

// Story-model stores with 1..max_layers layers (index i holds i+1 layers). Cached.
const std::vector<ModelBytes>& story_model_bytes(int max_layers = 8);

// What one of two data-parallel GPUs holds (weights + gradients + optimizer state, from that
// rank's allocator) with every expert on both (ep=1) and with the experts split (ep=2).
struct SplitBytes {
  std::int64_t replicated = 0, split = 0;
};
const SplitBytes& story_expert_split_bytes();

// The toy GPU's memory: a round number of MiB that puts the 4-layer model (weights, gradients,
// optimizer state) just under the top tick.
std::int64_t toy_capacity_bytes();

}  // namespace onegpu::app
