#pragma once
// The tiny MoE transformer with hand-written forward and backward, cut into pieces a pipeline
// engine can schedule: embed, one block, head+loss, and their backwards, all on a
// MicrobatchState that carries the residual stream and the saved activations.
#include <cstdint>
#include <memory>
#include <vector>

#include "trainer/memory/tracker.h"
#include "trainer/model/config.h"
#include "trainer/model/moe.h"
#include "trainer/model/params.h"
#include "trainer/ops/backend.h"

namespace onegpu::trainer {

// B texts of S tokens; targets[i] < 0 are ignored in the loss.
struct Batch {
  int B = 0, S = 0;
  std::vector<std::int32_t> inputs;   // [B*S]
  std::vector<std::int32_t> targets;  // [B*S]
};

// What one block keeps from forward for backward.
struct LayerCache {
  Buffer<float> x_in, rstd1, h1, qkv, probs, att, x_mid, rstd2, h2;
  Routing routing;
  ExpertCache experts;
  bool filled = false;
};

// One microbatch flowing through the model.
struct MicrobatchState {
  Batch batch;
  int T = 0;
  Buffer<float> x;   // residual stream [T, D]: input of the next block to run forward
  Buffer<float> dx;  // gradient of the residual stream during backward
  std::vector<LayerCache> layers;
  Buffer<float> x_final, rstd_f, h_f, logits;  // head
  double ce_sum = 0.0;   // summed cross-entropy over the targets
  int n_targets = 0;
  double aux_sum = 0.0;  // load-balancing + z losses of all blocks (coefficients applied)
};

// How the microbatch's losses enter the objective that backward differentiates:
// J = ce_scale * ce_sum + aux_scale * aux_sum.
struct LossScales {
  float ce_scale = 1.f;
  float aux_scale = 1.f;
};

class Model {
 public:
  // Weights are initialised from seed. The backend and tracker must outlive the model.
  Model(const ModelConfig& c, Backend& be, MemoryTracker& mt, std::uint64_t seed);

  const ModelConfig& config() const { return cfg_; }
  ParamStore& params() { return params_; }
  const ParamStore& params() const { return params_; }
  Backend& backend() { return *be_; }
  // Which backend runs the next ops: an engine that keeps one backend per worker thread points
  // a rank's model at the worker running that rank's op (ops of one rank never overlap).
  void set_backend(Backend& be) { be_ = &be; }
  MemoryTracker& tracker() { return mt_; }

  // Exact mode computes from the fp32 master weights instead of the bf16 copies: used by the
  // gradient checks, which must not see bf16 rounding.
  void set_exact(bool on) { exact_ = on; }
  // Hold the router's choices fixed: per layer, [T*k] expert ids (empty = route normally).
  void set_forced_routing(std::vector<std::vector<std::int32_t>> r) { forced_ = std::move(r); }

  // ---- pieces (a pipeline stage calls a range of them) ----
  void begin(MicrobatchState& st, const Batch& b) const;  // validates tokens, sizes the state
  void embed_forward(MicrobatchState& st);
  void layer_forward(int l, MicrobatchState& st);
  // Final norm, LM head and cross-entropy. With grad, also writes st.dx for the backward pass
  // (using scales) and accumulates head gradients.
  void head_forward(MicrobatchState& st, bool grad, const LossScales& sc);
  void layer_backward(int l, MicrobatchState& st, const LossScales& sc);
  void embed_backward(MicrobatchState& st);
  // Frees the activations a state holds (after backward, or after an eval forward).
  static void release(MicrobatchState& st);

  // ---- whole model ----
  // Forward and backward of one microbatch; gradients accumulate into params().grads.
  void forward_backward(MicrobatchState& st, const Batch& b, const LossScales& sc);
  // Forward only: summed cross-entropy and target count. Keeps st's caches (for probes).
  void forward(MicrobatchState& st, const Batch& b);

 private:
  // fp32 weights of a flat range: unpacked from bf16 into a working buffer, or the master copy.
  struct WeightView {
    Buffer<float> owned;
    const float* p = nullptr;
  };
  WeightView view(std::int64_t offset, std::int64_t n);
  MoeShape moe_shape(int T) const;

  ModelConfig cfg_;
  Backend* be_;
  MemoryTracker& mt_;
  ParamStore params_;
  bool exact_ = false;
  std::vector<std::vector<std::int32_t>> forced_;
};

}  // namespace onegpu::trainer
