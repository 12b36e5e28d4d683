#include "trainer/memory/full_size.h"

#include <algorithm>

#include "trainer/engine/virtual_clock.h"
#include "trainer/plan/layout.h"

namespace onegpu::trainer {

ModelConfig full_size_model() {
  ModelConfig m;
  m.name = "full-size (modelled)";
  m.vocab = 131072;
  m.d_model = 8192;
  m.n_heads = 64;
  m.n_layers = 32;
  m.n_experts = 64;
  m.top_k = 2;
  m.expert_hidden = 35328;  // chosen for 1.2 T weights: see full_size.h
  m.seq_len = 4096;
  return m;
}

FootprintSplit full_size_split() {
  FootprintSplit s;
  s.dp = 64;
  s.ep = 8;
  s.pp = 8;
  s.microbatches = 16;
  s.schedule = Schedule::OneFOneB;
  s.texts_per_microbatch = 1;
  return s;
}

StorageRules full_size_storage() {
  StorageRules r;
  r.bytes_per_value = 2;
  r.attention_matrix = false;
  r.fp32_weight_copy = false;
  r.grad_bucket_bytes = 1'000'000'000;
  return r;
}

GpuModel h100() { return {"H100", 80'000'000'000, 989e12}; }
GpuModel h200() { return {"H200", 141'000'000'000, 989e12}; }

std::int64_t active_params(const ModelConfig& m) {
  const std::int64_t D = m.d_model, E = m.n_experts, F = m.expert_hidden, V = m.vocab;
  const std::int64_t per_layer = 4 * D * D + 2 * D + D * E + (std::int64_t)m.top_k * 2 * D * F;
  return m.n_layers * per_layer + D + D * V;
}

ShareFigures share_figures(const ModelConfig& m, const FootprintSplit& split, int rank, const StorageRules& rules,
                           const GpuModel& gpu, double utilisation) {
  ShareFigures f;
  f.gpus = split.dp * split.pp;
  f.model_params = param_breakdown(m).total();
  f.model_bytes = 18 * f.model_params;
  for (int z = 0; z < 4; ++z) {
    FootprintSplit s = split;
    s.zero = z;
    f.zero[z] = rank_footprint(m, s, rank, rules);
    StorageRules r = rules;
    r.recompute = true;
    f.zero_recompute[z] = rank_footprint(m, s, rank, r);
  }

  // ---- time: FLOPs over every GPU at the stated utilisation ----
  const std::int64_t S = split.seq_len > 0 ? split.seq_len : m.seq_len;
  const std::int64_t T = (std::int64_t)split.texts_per_microbatch * S;
  f.active_params = active_params(m);
  f.tokens_per_step = (std::int64_t)split.dp * split.microbatches * T;
  const double per_token = 6.0 * (double)f.active_params + 12.0 * m.n_layers * (double)m.d_model * (double)S;
  f.flops_per_step = per_token * (double)f.tokens_per_step;
  f.utilisation = utilisation;
  f.peak_flops = gpu.bf16_flops;
  const double world = (double)split.dp * split.pp;
  f.step_seconds = f.flops_per_step / (world * gpu.bf16_flops * utilisation);

  // ---- communication: what this rank sends in one step, on the link model ----
  RunConfig rc;
  rc.layers = m.n_layers;
  rc.experts = m.n_experts;
  rc.top_k = m.top_k;
  rc.dp = split.dp;
  rc.ep = split.ep;
  rc.pp = split.pp;
  rc.vstages = split.vstages;
  rc.microbatches = split.microbatches;
  rc.schedule = split.schedule;
  const Layout L(rc);
  const CostModel cost;  // NVLink inside a machine of 8, InfiniBand between machines
  const RankFootprint& own = f.zero[0];
  const std::int64_t a = rules.bytes_per_value;
  auto add = [&](std::string what, std::vector<int> members, int phases, std::int64_t calls, std::int64_t buffer) {
    if (members.size() < 2 || calls == 0) return;
    const std::vector<std::int32_t> ranks(members.begin(), members.end());
    const Link& link = cost.group_link(ranks);
    const int n = (int)members.size();
    CollectiveFigure c;
    c.what = std::move(what);
    c.members = n;
    c.link = std::string(link.name);
    c.calls = calls;
    c.buffer_bytes = buffer;
    c.sent_bytes = calls * phases * (buffer / n) * (n - 1);
    c.seconds = (double)calls * phases * ring_phase_seconds(link, n, buffer);
    f.collectives.push_back(std::move(c));
  };
  const std::vector<int> dense = L.dense_group(rank), experts = L.expert_group(rank);
  // zero 0: fp32 gradients all-reduced (two ring phases), once per step.
  add("dense gradients: all-reduce", dense, 2, 1, 4 * own.dense_params);
  add("expert gradients: all-reduce", experts, 2, 1, 4 * own.expert_params);
  // zero 1: fp32 gradients reduce-scattered, then the updated bf16 weights all-gathered.
  add("dense gradients: reduce-scatter (ZeRO-1)", dense, 1, 1, 4 * own.dense_params);
  add("dense weights: all-gather (ZeRO-1)", dense, 1, 1, 2 * own.dense_params);
  add("expert gradients: reduce-scatter (ZeRO-1)", experts, 1, 1, 4 * own.expert_params);
  add("expert weights: all-gather (ZeRO-1)", experts, 1, 1, 2 * own.expert_params);
  // Tokens to and from their experts: four all-to-alls a layer and microbatch (dispatch and
  // combine, forward and backward), T·k rows of d values each.
  const std::int64_t held_layers = (std::int64_t)rc.layers_per_chunk() * rc.vstages;
  add("tokens to experts and back: all-to-all", L.all_to_all_group(rank), 1, 4 * held_layers * split.microbatches,
      a * T * m.top_k * m.d_model);
  // Hidden states up the pipeline and their gradients down: one send a microbatch and chunk.
  if (split.pp > 1) {
    const RankCoord at = L.coord(rank);
    const int up = L.rank_of(std::min(at.stage + 1, split.pp - 1), at.dp), down = L.rank_of(std::max(at.stage - 1, 0), at.dp);
    const std::int64_t sends = (std::int64_t)split.microbatches * split.vstages;
    for (auto [what, peer] : {std::pair{"hidden states up: send", up}, std::pair{"their gradients down: send", down}}) {
      if (peer == rank) continue;
      const Link& link = cost.link(rank, peer);
      CollectiveFigure c;
      c.what = what;
      c.members = 2;
      c.link = std::string(link.name);
      c.calls = sends;
      c.buffer_bytes = a * T * m.d_model;
      c.sent_bytes = sends * c.buffer_bytes;
      c.seconds = (double)sends * cost.p2p_cost(rank, peer, c.buffer_bytes);
      f.collectives.push_back(std::move(c));
    }
  }
  return f;
}

std::string what_fits(const ShareFigures& f, const GpuModel& gpu) {
  static const char* names[4] = {"no sharding", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
  for (int z = 0; z < 4; ++z)
    if (f.zero[z].total() <= gpu.memory_bytes) return names[z];
  for (int z = 0; z < 4; ++z)
    if (f.zero_recompute[z].total() <= gpu.memory_bytes) return std::string(names[z]) + " + recomputation";
  return "";
}

}  // namespace onegpu::trainer
