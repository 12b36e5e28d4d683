#pragma once
// The mixture-of-experts feed-forward as four separable steps, so that dispatch and combine can
// later become all-to-alls between ranks that hold different experts:
//   route    : router logits -> probabilities -> top-k experts and renormalised gates per token
//   dispatch : gather each token's input rows, grouped by expert (expert-major order)
//   experts  : each expert's MLP on its rows (silu(x W1) W2)
//   combine  : each token's output = sum of gate * expert output over its k choices
// Each step has its backward.
#include <cstdint>
#include <vector>

#include "trainer/memory/tracker.h"
#include "trainer/ops/backend.h"

namespace onegpu::trainer {

struct Routing {
  int T = 0, k = 0, E = 0;
  Buffer<float> logits;        // [T, E]
  Buffer<float> probs;         // [T, E] softmax of logits
  Buffer<std::int32_t> expert; // [T*k] chosen expert of slot s = t*k + j (j by descending prob)
  Buffer<float> gate;          // [T*k] renormalised gates
  Buffer<std::int32_t> order;  // [T*k] slots sorted by expert, token order inside an expert
  Buffer<std::int32_t> token_of_row;  // [T*k] token of each dispatched row
  Buffer<std::int32_t> row_of_slot;   // [T*k] inverse of order
  std::vector<std::int32_t> offsets;  // [E+1] rows of expert e: [offsets[e], offsets[e+1])
  // [T] log-sum-exp of each token's logits, made once by moe_route for the z-loss and read
  // again by its backward (untracked: a few kB, like offsets).
  std::vector<double> lse;
  double aux_loss = 0.0;       // load-balancing loss (coefficient applied)
  double z_loss = 0.0;         // router z-loss (coefficient applied)
  // Tokens and rows per expert of the whole microbatch, which the router losses average over:
  // these tokens' own (T and the offsets) unless the microbatch runs as shards of its texts
  // (Model::join_router_losses sets the sums over all of them before the backward).
  int batch_T = 0;
  std::vector<std::int32_t> batch_counts;  // [E]
};

struct MoeWeights {
  const float* router;   // [D, E]
  const float* experts;  // expert e: w1 [D, H] at e*stride, w2 [H, D] at e*stride + D*H
  long expert_stride;
};
struct MoeGrads {
  float* router;
  float* experts;
  long expert_stride;
};

struct MoeShape {
  int T, D, E, k, H;
  float aux_coef, z_coef;
};

// forced: if non-null, [T*k] expert ids to use instead of the top-k (selection held fixed, for
// gradient checks and replays); gates still come from the current probabilities.
void moe_route(Backend& be, MemoryTracker& mt, const MoeShape& s, const float* h, const MoeWeights& w,
               const std::int32_t* forced, Routing& r);
void moe_dispatch(Backend& be, const MoeShape& s, const Routing& r, const float* h, float* xe);
// The load-balancing and z losses (coefficients applied) of a microbatch whose tokens were
// routed in parts, in token order: the same sums, in the same order, as moe_route makes for
// one part holding them all.
void moe_router_losses(const std::vector<const Routing*>& parts, float aux_coef, float z_coef, double& aux_loss,
                       double& z_loss);
struct ExpertCache {
  Buffer<float> xe, u, a, y;  // [T*k, D], [T*k, H], [T*k, H], [T*k, D]
};
void moe_experts_forward(Backend& be, const MoeShape& s, const Routing& r, const MoeWeights& w,
                         ExpertCache& c);
// out += combined expert outputs.
void moe_combine(Backend& be, const MoeShape& s, const Routing& r, const float* y, float* out);

// Backward. dout: gradient of the block output's MoE branch [T, D].
// Writes dgate [T*k] and dy [T*k, D].
void moe_combine_backward(Backend& be, const MoeShape& s, const Routing& r, const float* y, const float* dout,
                          float* dy, float* dgate);
// dxe [T*k, D] overwritten; expert weight grads accumulated.
void moe_experts_backward(Backend& be, MemoryTracker& mt, const MoeShape& s, const Routing& r,
                          const MoeWeights& w, const ExpertCache& c, const float* dy, float* dxe,
                          const MoeGrads& g);
// dh += scatter of dxe (slot order).
void moe_dispatch_backward(Backend& be, const MoeShape& s, const Routing& r, const float* dxe, float* dh);
// From dgate and the auxiliary losses (scaled by aux_scale) to dh (accumulated) and router grads.
void moe_route_backward(Backend& be, MemoryTracker& mt, const MoeShape& s, const Routing& r,
                        const float* h, const MoeWeights& w, const float* dgate, float aux_scale,
                        float* dh, const MoeGrads& g);

// Zero-bubble (ZB-H1) split of the two backward steps that make weight gradients: the input
// part (B) computes what flows to the layer below and keeps what the weight part (W) needs;
// W accumulates the weight gradients later. B then W gives the same numbers as the whole step.
// Experts: B writes dxe [rows, D] and du [rows, H]; W adds dW2 += a^T dy, dW1 += xe^T du.
void moe_experts_backward_input(Backend& be, MemoryTracker& mt, const MoeShape& s, const Routing& r,
                                const MoeWeights& w, const ExpertCache& c, const float* dy, float* dxe, float* du);
void moe_experts_backward_weight(Backend& be, const MoeShape& s, const Routing& r, const ExpertCache& c,
                                 const float* dy, const float* du, const MoeGrads& g);
// The same for expert e alone.
void moe_expert_backward_weight(Backend& be, const MoeShape& s, const Routing& r, const ExpertCache& c,
                                const float* dy, const float* du, const MoeGrads& g, int e);
// Router: B writes dlogits [T, E] and adds to dh; W adds dWr += h^T dlogits.
void moe_route_backward_input(Backend& be, const MoeShape& s, const Routing& r, const MoeWeights& w,
                              const float* dgate, float aux_scale, float* dh, float* dlogits);
void moe_route_backward_weight(Backend& be, const MoeShape& s, const float* h, const float* dlogits,
                               const MoeGrads& g);

}  // namespace onegpu::trainer
