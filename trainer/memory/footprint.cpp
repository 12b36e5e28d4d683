#include "trainer/memory/footprint.h"

#include <algorithm>
#include <string>

#include "trainer/error.h"
#include "trainer/plan/layout.h"

namespace onegpu::trainer {

std::int64_t RankFootprint::params_bytes() const {
  return (*this)[MemCategory::Weights] + (*this)[MemCategory::Gradients] + (*this)[MemCategory::Optimizer];
}

std::int64_t RankFootprint::total() const {
  std::int64_t s = 0;
  for (std::int64_t b : bytes) s += b;
  return s;
}

std::int64_t shard_begin(std::int64_t n, int d, int i) { return n * i / d; }
std::int64_t shard_size(std::int64_t n, int d, int i) { return shard_begin(n, d, i + 1) - shard_begin(n, d, i); }

int chunks_in_flight(Schedule s, int pp, int vstages, int microbatches, int stage) {
  const int all = microbatches * vstages;
  switch (s) {
    case Schedule::GPipe: return all;
    case Schedule::OneFOneB: return std::min(all, pp - stage);
    // ZB-H1: 1F1B's pp − stage, plus the stage's `stage` deferred weight-gradient passes,
    // whose microbatches keep part of their activations (schedule.cpp).
    case Schedule::ZeroBubbleH1: return std::min(all, pp);
    case Schedule::Interleaved:  // Megatron-LM: warm-up forwards, then one more before each backward
      return std::min(all, (pp - stage - 1) * 2 + (vstages - 1) * pp + 1);
  }
  return all;
}

namespace {

std::int64_t sum(std::initializer_list<std::int64_t> v) {
  std::int64_t s = 0;
  for (std::int64_t x : v) s += x;
  return s;
}

}  // namespace

RankFootprint rank_footprint(const ModelConfig& m, const FootprintSplit& sp, int rank, const StorageRules& rules) {
  if (sp.zero < 0 || sp.zero > 3) throw Error("zero must be 0, 1, 2 or 3 (got " + std::to_string(sp.zero) + ")");
  const int S = sp.seq_len > 0 ? sp.seq_len : m.seq_len;
  RunConfig rc;
  rc.layers = m.n_layers;
  rc.experts = m.n_experts;
  rc.top_k = m.top_k;
  rc.dp = sp.dp;
  rc.ep = sp.ep;
  rc.pp = sp.pp;
  rc.vstages = sp.vstages;
  rc.microbatches = sp.microbatches;
  rc.schedule = sp.schedule;
  rc.sizes.tokens_per_microbatch = (std::int64_t)sp.texts_per_microbatch * S;
  const Layout L(rc);  // validates the split
  if (rank < 0 || rank >= L.world()) throw Error("rank " + std::to_string(rank) + " is outside the split");
  const RankCoord at = L.coord(rank);

  // ---- the weights it holds (the same count as ParamStore's shard, params.h) ----
  const std::int64_t D = m.d_model, E = m.n_experts, F = m.expert_hidden, V = m.vocab, K = m.top_k;
  const std::int64_t dense_layer = 4 * D * D + 2 * D + D * E;  // attention, two norms, router
  const std::int64_t expert = 2 * D * F;                       // w1 [D, F], w2 [F, D]
  const bool first = at.stage == L.stage_of_chunk(0), last = at.stage == L.stage_of_chunk(rc.chunks() - 1);
  const std::int64_t layers = (std::int64_t)rc.layers_per_chunk() * rc.vstages;
  RankFootprint f;
  f.dense_params = layers * dense_layer + (first ? V * D : 0) + (last ? D + D * V : 0);
  f.expert_params = layers * rc.experts_per_rank() * expert;
  f.params = f.dense_params + f.expert_params;
  f.dense_group = sp.dp;
  f.expert_group = sp.dp / sp.ep;

  // What a sharded category holds: the rank's piece of every collective (chunk and group).
  std::int64_t pieces = 0;
  for (int c : L.chunks_of_stage(at.stage)) {
    const std::int64_t dense = rc.layers_per_chunk() * dense_layer + (c == 0 ? V * D : 0) + (c == rc.chunks() - 1 ? D + D * V : 0);
    pieces += shard_size(dense, f.dense_group, at.dp) +
              shard_size((std::int64_t)rc.layers_per_chunk() * rc.experts_per_rank() * expert, f.expert_group, at.ep_group);
  }
  f.sharded_params = pieces;
  // A category of `b` bytes a weight, split over the copies from ZeRO stage `from` on.
  auto held = [&](std::int64_t b, int from) { return b * (sp.zero < from ? f.params : pieces); };
  auto& by = f.bytes;
  by[(std::size_t)MemCategory::Weights] = held(2, 3);
  by[(std::size_t)MemCategory::Gradients] = held(4, 2);
  by[(std::size_t)MemCategory::Optimizer] = held(12, 1);

  // ---- activations ----
  const std::int64_t B = sp.texts_per_microbatch, T = B * S, a = rules.bytes_per_value;
  // Kept per layer and microbatch: x_in, h1, qkv (3), att, x_mid, h2 = 8 T·D, two rstd T; the
  // attention matrix; router logits and probabilities T·E, gates T·k; four int32 index arrays
  // T·k; the experts' input and output rows T·k·D each, hidden pair T·k·F each.
  const std::int64_t per_layer =
      a * sum({8 * T * D, 2 * T, rules.attention_matrix ? B * m.n_heads * (std::int64_t)S * S : 0, 2 * T * E, T * K,
               2 * T * K * D, 2 * T * K * F}) +
      4 * 4 * T * K;
  const int chunks = chunks_in_flight(sp.schedule, sp.pp, sp.vstages, sp.microbatches, at.stage);
  f.in_flight = (double)chunks / sp.vstages;
  const std::int64_t kept_per_layer = rules.recompute ? a * T * D : per_layer;
  std::int64_t kept = (std::int64_t)chunks * rc.layers_per_chunk() * kept_per_layer;
  // The last chunk's microbatches also keep the head's input, its norm and the gradient
  // waiting for backward (x_final, h_f, dx: 3 T·D, rstd_f T).
  if (last) kept += (std::int64_t)std::min(chunks, sp.microbatches) * a * (3 * T * D + T);
  // Briefly live inside one op, the largest of: a layer's bf16 weights unpacked to fp32 with
  // its backward working set (about 7 T·D, 2 T·k·D, 2 T·k·F, T·E; with recomputation, the
  // layer's recomputed activations too); the head's weights with the logits' gradient; the
  // embedding's weights.
  const std::int64_t w32 = rules.fp32_weight_copy ? 4 : 0;
  const std::int64_t layer_view = w32 * (dense_layer + rc.experts_per_rank() * expert);
  const std::int64_t work = layer_view + a * sum({7 * T * D, 2 * T * K * D, 2 * T * K * F, T * E}) +
                            (rules.recompute ? per_layer : 0);
  const std::int64_t head_work = last ? w32 * D * V + a * (2 * T * V + T * D) : 0;
  const std::int64_t embed_work = first ? w32 * V * D : 0;
  by[(std::size_t)MemCategory::Activations] = kept + std::max({work, head_work, embed_work});

  // ---- communication: the largest buffer live at once ----
  // Gradient reduction: one layer's dense or expert gradients (or the embedding, or the head)
  // in fp32; a send of hidden states T·D; an all-to-all's rows T·k·D. Eager sends waiting
  // for their receive add to it (measured: up to 4 hidden-state buffers at once, the test).
  std::int64_t grad_buf = 0;
  if (f.dense_group > 1) grad_buf = std::max({dense_layer, first ? V * D : 0, last ? D + D * V : 0});
  if (f.expert_group > 1) grad_buf = std::max(grad_buf, rc.experts_per_rank() * expert);
  if (rules.grad_bucket_bytes > 0) grad_buf = std::min(grad_buf, rules.grad_bucket_bytes / 4);
  std::int64_t comm = 4 * grad_buf;
  if (sp.pp > 1) comm = std::max(comm, a * T * D);
  if (sp.ep > 1) comm = std::max(comm, a * T * K * D);
  by[(std::size_t)MemCategory::Communication] = comm;
  return f;
}

}  // namespace onegpu::trainer
