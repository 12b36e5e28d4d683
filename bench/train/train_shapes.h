#pragma once
// What both training benchmarks (CPU: train_bench.cpp, GPU: gpu_bench.cpp) count and feed:
// the model FLOPs of a training step per token, and a batch of random tokens (the shapes, not
// the text, set the cost).
#include <cstdint>

#include "trainer/model/config.h"
#include "trainer/model/model.h"
#include "trainer/model/params.h"  // Rng

namespace onegpu::bench {

// Matmul FLOPs of one training step per token (forward + backward = 3 x forward).
inline double train_flops_per_token(const trainer::ModelConfig& c) {
  double D = c.d_model, per_layer = 2 * (4 * D * D + D * c.n_experts + c.top_k * 2 * D * c.expert_hidden) +
                                    2 * 2 * (c.seq_len / 2.0) * D;  // scores and P·V, causal half
  return 3 * (c.n_layers * per_layer + 2 * D * c.vocab);
}

// B texts of S random tokens (inputs and targets), the same for a given seed.
inline trainer::Batch random_batch(int B, int S, int vocab, std::uint64_t seed = 5) {
  trainer::Rng rng(seed);
  trainer::Batch b;
  b.B = B;
  b.S = S;
  for (int i = 0; i < B * S; ++i) {
    b.inputs.push_back((std::int32_t)(rng.next() % vocab));
    b.targets.push_back((std::int32_t)(rng.next() % vocab));
  }
  return b;
}

}  // namespace onegpu::bench
