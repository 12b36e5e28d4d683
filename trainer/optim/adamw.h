#pragma once
// AdamW on the fp32 master weights, with linear warmup then cosine decay of the learning rate
// and clipping by the global gradient norm. After the update the bf16 weights are re-rounded
// from the master copy.
#include <cstdint>
#include <vector>

#include "trainer/model/params.h"

namespace onegpu::trainer {

struct AdamWConfig {
  float lr = 3e-3f;          // peak learning rate
  float min_lr_ratio = 0.1f; // cosine decays to lr * min_lr_ratio
  int warmup_steps = 50;
  int total_steps = 1000;    // end of the cosine
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
  float weight_decay = 0.1f; // decoupled; not applied to norm gains
  float clip_norm = 1.0f;    // <= 0: no clipping
  void validate() const;     // throws Error
};

// Learning rate of update number `step` (0-based).
float learning_rate(const AdamWConfig& c, int step);

struct UpdateStats {
  double grad_norm = 0.0;  // before clipping
  float lr = 0.f;
  float clip_scale = 1.f;
};

class ThreadPool;
class Backend;

// Zeroes every gradient, split among the pool's threads (null: this one): the step's first
// pass over a large store, which one thread otherwise makes while the others wait.
void zero_grads(ParamStore& p, ThreadPool* pool);

// Global L2 norm of all gradients, summed in a fixed order (fixed blocks, then in block order),
// so the result does not depend on the pool.
double global_grad_norm(const ParamStore& p, ThreadPool* pool = nullptr);

// One AdamW update; `step` is the number of updates done before this one. Element-wise, so
// splitting it over a pool changes nothing in the result.
UpdateStats adamw_update(ParamStore& p, const AdamWConfig& c, int step, ThreadPool* pool = nullptr);

// For a model split over ranks (trainer/parallel), whose gradient norm sums the shares of
// every rank: the sum of squares of n gradients (eight fixed lanes), and the same update with
// the norm given instead of computed from p.
double sum_of_squares(const float* g, std::int64_t n);
UpdateStats adamw_update_with_norm(ParamStore& p, const AdamWConfig& c, int step, double grad_norm,
                                   ThreadPool* pool = nullptr);

// ZeRO-1: the optimizer state of some pieces of p only. Piece i covers p's flat weights
// [flat, flat + n) and its state sits at [at, at + n) of master, m and v; the update writes
// the pieces' new bf16 weights into p.weights. Element-wise like adamw_update, so a weight
// gets bitwise the same update whichever rank holds its state.
struct OptimizerPiece {
  std::int64_t flat = 0, n = 0, at = 0;
};
UpdateStats adamw_update_pieces(ParamStore& p, float* master, float* m, float* v,
                                const std::vector<OptimizerPiece>& pieces, const AdamWConfig& c, int step,
                                double grad_norm);

// The same update through a backend's ops (Backend::sum_squares, Backend::adamw), for a
// model whose gradients and optimizer state live on a device: the norm is one reduction (one
// number comes back to the host), the update one launch per tensor, and it returns once the
// update is done. On a device the sum's order differs from global_grad_norm's blocks, so the
// norm may differ in its last bits.
UpdateStats adamw_update(ParamStore& p, const AdamWConfig& c, int step, Backend& be);
// The same with the norm given (a split run's ranks on a device, trainer/parallel). With a CPU
// backend it is bitwise adamw_update_with_norm above (the same element-wise update).
UpdateStats adamw_update_with_norm(ParamStore& p, const AdamWConfig& c, int step, double grad_norm, Backend& be);

}  // namespace onegpu::trainer
