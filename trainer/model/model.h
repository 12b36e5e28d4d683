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
  Buffer<float> dy, dgate, dxe, dh2;  // backward of the MoE branch, between its pieces
  Buffer<float> du, dlogits, dx_mid, dqkv;  // zero-bubble: kept by the input part for the weight part
  Buffer<float> dh1;  // MicrobatchState::shard: the norm1 gain's incoming gradient
  bool filled = false;
  bool weight_pending = false;  // layer_backward_input ran, layer_backward_weight has not
};

// One microbatch flowing through the model.
struct MicrobatchState {
  Batch batch;
  int T = 0;
  Buffer<float> x;   // residual stream [T, D]: input of the next block to run forward
  Buffer<float> dx;  // gradient of the residual stream during backward
  // What each block keeps for backward, for the blocks this state runs: model layers
  // layer0 .. layer0 + size - 1 (a pipeline stage's chunk; all of them on one GPU). From the
  // host pool: a split run holds thousands of these at once, made afresh in its first step.
  int layer0 = 0;
  std::vector<LayerCache, HostAllocator<LayerCache>> layer_caches;
  LayerCache& layer(int l) { return layer_caches[checked(l)]; }
  const LayerCache& layer(int l) const { return layer_caches[checked(l)]; }
  std::size_t checked(int l) const;  // l's index in layer_caches; throws Error outside them
  Buffer<float> x_final, rstd_f, h_f, logits;  // head
  // [T, V] loss gradient at the logits, kept by head_forward(defer_weight) for the head's
  // weight gradient (head_backward_weight).
  Buffer<float> dlogits_head;
  double ce_sum = 0.0;   // summed cross-entropy over the targets
  int n_targets = 0;
  double aux_sum = 0.0;  // load-balancing + z losses of all blocks (coefficients applied)
  // A read-out for a learner: when probe_row >= 0, head_forward keeps that row's logits [V]
  // (untracked: a few kB, not part of the model's memory).
  int probe_row = -1;
  std::vector<float> probe_logits;
  // Where this state's ops run: null = the model's backend. A worker thread points it at its own.
  Backend* backend = nullptr;
  // One shard of a microbatch cut by texts (trainer/train/split_step.h): head_forward and
  // layer_backward_input leave the norm gains' gradients to add_weight_piece, keeping what it
  // reads (the norms' inputs, rstd and incoming gradients: dh_final, and per block dh1, dh2),
  // and head_forward keeps each row's cross-entropy, which the shards' rows add up in order.
  bool shard = false;
  Buffer<float> dh_final;
  std::vector<double> row_ce;
};

// How the microbatch's losses enter the objective that backward differentiates:
// J = ce_scale * ce_sum + aux_scale * aux_sum.
struct LossScales {
  float ce_scale = 1.f;
  float aux_scale = 1.f;
};

// fp32 weights kept outside the model, read by its ops instead of a working copy widened from
// bf16 in every op: a split run keeps one per shard for a step (trainer/parallel/weight_cache.h).
class WideWeights {
 public:
  virtual ~WideWeights() = default;
  // The n weights at `offset` of the store as fp32, `src` being those weights (bf16) in the
  // caller's own store; valid until the weights change. Null: the caller widens them itself.
  virtual const float* wide(const bf16* src, std::int64_t offset, std::int64_t n) = 0;
};

class Model {
 public:
  // Weights are initialised from seed. The backend and tracker must outlive the model.
  Model(const ModelConfig& c, Backend& be, MemoryTracker& mt, std::uint64_t seed);
  // A rank's part of a split model (trainer/parallel): weights copied from `whole`.
  Model(const ModelConfig& c, Backend& be, MemoryTracker& mt, const ParamShard& shard, const ParamStore& whole);
  // A rank's part whose weights the caller has set itself (trainer/parallel sets only those a
  // rank starts with). `params` must charge `mt`.
  Model(const ModelConfig& c, Backend& be, MemoryTracker& mt, ParamStore params);

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
  // Read fp32 weights from `w` (null: widen them in every op). The working copy no longer made
  // is still charged as activations, so the memory figures stay those of a device that widens.
  void set_wide_weights(WideWeights* w) { wide_ = w; }
  // Hold the router's choices fixed: per layer, [T*k] expert ids (empty = route normally).
  void set_forced_routing(std::vector<std::vector<std::int32_t>> r) { forced_ = std::move(r); }

  // ---- pieces (a pipeline stage calls a range of them) ----
  // Validates tokens, sizes the state for model layers [first, first + count) (count < 0: all).
  void begin(MicrobatchState& st, const Batch& b, int first = 0, int count = -1) const;
  void embed_forward(MicrobatchState& st);
  void layer_forward(int l, MicrobatchState& st);
  // Final norm, LM head and cross-entropy. With grad, also writes st.dx for the backward pass
  // (using scales) and accumulates head gradients.
  // defer_weight: leave the head's weight gradient to head_backward_weight (st keeps dlogits).
  void head_forward(MicrobatchState& st, bool grad, const LossScales& sc, bool defer_weight = false);
  void head_backward_weight(MicrobatchState& st);
  void layer_backward(int l, MicrobatchState& st, const LossScales& sc);
  void embed_backward(MicrobatchState& st);

  // ---- one block cut where its tokens travel to and from the ranks holding their experts ----
  // layer_forward(l) is attention (norms, attention, router, top-k, rows packed by expert into
  // st.layer(l).experts.xe), experts (on those rows; fills .y), combine (x += gated sum of y).
  // layer_backward(l) is combine (fills .dy, .dgate), experts (fills .dxe, expert gradients),
  // attention (the rest, down to the block input). The pieces give the same numbers as the
  // whole functions. With experts split over ranks, the experts piece runs on other ranks:
  // experts_forward / experts_backward run this shard's experts on rows sent to it, rows
  // [offsets[i], offsets[i+1]) going to its i-th expert.
  void layer_forward_attention(int l, MicrobatchState& st);
  void layer_forward_experts(int l, MicrobatchState& st);
  void layer_forward_combine(int l, MicrobatchState& st);
  void layer_backward_combine(int l, MicrobatchState& st);
  void layer_backward_experts(int l, MicrobatchState& st);
  void layer_backward_attention(int l, MicrobatchState& st, const LossScales& sc);
  // Zero-bubble (ZB-H1): layer_backward(l) as two ops. The input part leaves st.dx at the block
  // input (and makes the norm gains' gradients); the weight part, run later, adds the
  // attention, router and expert weight gradients from what the input part kept. Together
  // they give layer_backward's numbers. layer_backward_input needs every expert on this rank.
  void layer_backward_input(int l, MicrobatchState& st, const LossScales& sc);
  void layer_backward_weight(int l, MicrobatchState& st);
  // The same with the experts on other ranks: layer_backward_combine, then the experts' input
  // part on their ranks (experts_backward_input, keeping du), then
  // layer_backward_attention_input here; later layer_backward_weight here and
  // experts_backward_weight on the experts' ranks.
  void layer_backward_attention_input(int l, MicrobatchState& st, const LossScales& sc);
  void experts_backward_input(int l, const std::vector<std::int32_t>& offsets, const ExpertCache& c, const float* dy,
                              float* dxe, float* du);
  void experts_backward_weight(int l, const std::vector<std::int32_t>& offsets, const ExpertCache& c, const float* dy,
                               const float* du);
  void experts_forward(int l, const std::vector<std::int32_t>& offsets, ExpertCache& c);
  void experts_backward(int l, const std::vector<std::int32_t>& offsets, const ExpertCache& c, const float* dy,
                        float* dxe);
  // Frees the activations a state holds (after backward, or after an eval forward).
  static void release(MicrobatchState& st);

  // ---- whole model ----
  // Forward and backward of one microbatch; gradients accumulate into params().grads.
  void forward_backward(MicrobatchState& st, const Batch& b, const LossScales& sc);
  // ---- a microbatch run as shards, each holding some of its texts (trainer/train/split_step.h) ----
  // Once every shard's forward is done: gives each shard's routing the whole microbatch's token
  // and per-expert row counts (the router losses average over them, and so do their gradients)
  // and returns the microbatch's router losses, bit for bit the aux_sum of a forward on all its
  // texts at once. Shards in text order.
  double join_router_losses(const std::vector<MicrobatchState*>& shards) const;
  // The weight gradients of a shard that ran head_forward(defer_weight) and
  // layer_backward_input on every block, keeping st.dx (no embed_backward), come in pieces: the
  // head, the final norm's gain, the embedding table, and per block its qkv weights, its output
  // projection, its router, its two norm gains (with st.shard) and each expert.
  // add_weight_piece adds one piece from st's rows to params().grads on `be`, with the very ops
  // (and so the bits) the unsplit backward adds them with; pieces touch disjoint weights, so
  // different pieces may run at once.
  static constexpr int kHeadPiece = 0, kFinalNormPiece = 1, kEmbedPiece = 2;
  int weight_piece_count() const { return first_weight_piece(cfg_.n_layers); }
  int first_weight_piece(int l) const { return 3 + l * (5 + cfg_.n_experts); }  // block l's: 5 + n_experts
  void add_weight_piece(int piece, const MicrobatchState& st, Backend& be);
  // Forward only: summed cross-entropy and target count. Keeps st's caches (for probes).
  void forward(MicrobatchState& st, const Batch& b);

 private:
  // fp32 weights of a flat range: unpacked from bf16 into a working buffer, or the master copy.
  struct WeightView {
    Buffer<float> owned;
    const float* p = nullptr;
  };
  WeightView view(Backend& be, std::int64_t offset, std::int64_t n);
  Backend& backend(const MicrobatchState& st) { return st.backend ? *st.backend : *be_; }
  MoeShape moe_shape(int T) const;
  const float* check_layer(int l) const;  // throws unless block l is held; returns nothing useful
  // Pieces on given weights: w = block base (norms, attention, router), we = its first expert.
  void fwd_attention(int l, MicrobatchState& st, const float* w);
  void fwd_experts(int l, MicrobatchState& st, const float* we);
  void fwd_combine(int l, MicrobatchState& st);
  void bwd_combine(int l, MicrobatchState& st);
  void bwd_experts(int l, MicrobatchState& st, const float* we);
  void bwd_attention(int l, MicrobatchState& st, const LossScales& sc, const float* w);
  void bwd_attention_input(int l, MicrobatchState& st, const LossScales& sc, const float* w);

  ModelConfig cfg_;
  Backend* be_;
  MemoryTracker& mt_;
  ParamStore params_;
  bool exact_ = false;
  WideWeights* wide_ = nullptr;
  std::vector<std::vector<std::int32_t>> forced_;
};

}  // namespace onegpu::trainer
