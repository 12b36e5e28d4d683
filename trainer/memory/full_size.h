#pragma once
// The full-size run the story ends on, as a model (nothing here allocates or trains it): a
// 1.2-trillion-weight MoE over 512 GPUs, and what one GPU's share of it would cost in memory
// and time. Every figure is MODELLED from the shape (footprint.h, the virtual clock's link
// model), never measured: screens label them so.
//
// The shape. 32 layers, 64 experts a layer, top-2 routing, as the story draws; a d_model of
// 8,192 with 64 heads of 128 (a common width at this size); a 131,072-token vocabulary and
// 4,096-token texts. The expert MLP's hidden width is what is left to choose: with this
// trainer's two-matrix experts (2·d·F weights each) the total is
//   32 · (4d² + 2d + 64d + 64 · 2dF) + 2·V·d + d,
// and F = 35,328 (4.3125·d, a multiple of 256) makes it 1,196,165,701,632 ≈ 1.2 T
// (F = 4d would give 1.11 T; the next multiple of 256 up, 1.20 T, overshoots by more).
//
// The split, as the story lays it out: pp 8 × dp 64 (512 GPUs), experts split 8 ways inside
// each group of 8 neighbours (one machine), 1F1B with 16 microbatches of one text per
// data-parallel rank (4,194,304 tokens a step).
#include <string>
#include <vector>

#include "trainer/memory/footprint.h"
#include "trainer/model/config.h"

namespace onegpu::trainer {

ModelConfig full_size_model();
FootprintSplit full_size_split();
// How a large run keeps activations (bf16, attention recomputed, no fp32 weight copy, 1 GB
// gradient buckets).
StorageRules full_size_storage();

struct GpuModel {
  std::string name;
  std::int64_t memory_bytes = 0;  // as sold: 80 GB, 141 GB (10⁹ bytes)
  double bf16_flops = 0;          // dense bf16 peak, FLOP/s
};
GpuModel h100();  // 80 GB, 989 TFLOP/s
GpuModel h200();  // 141 GB, 989 TFLOP/s (the H100's compute, more and faster memory)

// Weights a token passes through: every layer's attention, norms and router, top-k experts of
// every layer, and the head (the embedding is a lookup, no multiply).
std::int64_t active_params(const ModelConfig& m);

// One collective of a step, as the link model prices it (CostModel's ring formulas).
struct CollectiveFigure {
  std::string what;          // "dense gradients, all-reduce"
  int members = 0;
  std::string link;          // "nvlink", "ib"
  std::int64_t calls = 0;    // per step
  std::int64_t buffer_bytes = 0;  // per call, per member
  std::int64_t sent_bytes = 0;    // per step, by this rank
  double seconds = 0;             // per step, if nothing overlaps it
};

// GPU `rank`'s share of `model` under `split`, modelled.
struct ShareFigures {
  int gpus = 0;                    // dp × pp
  std::int64_t model_params = 0;   // the whole model
  std::int64_t model_bytes = 0;    // × 18
  RankFootprint zero[4];           // zero 0..3 (1: the trainer runs it; 2, 3 formula only)
  RankFootprint zero_recompute[4]; // the same with activation recomputation
  // Step time: 6 × active weights × tokens, plus attention 12 · layers · d · seq per token
  // (PaLM's count), over all GPUs at `utilisation` of the dense bf16 peak.
  std::int64_t active_params = 0;
  std::int64_t tokens_per_step = 0;
  double flops_per_step = 0;
  double utilisation = 0.4;
  double peak_flops = 0;           // per GPU
  double step_seconds = 0;
  std::vector<CollectiveFigure> collectives;  // zero 0 (all-reduce) then zero 1 (reduce-scatter, all-gather)
};
ShareFigures share_figures(const ModelConfig& model, const FootprintSplit& split, int rank,
                           const StorageRules& rules, const GpuModel& gpu, double utilisation = 0.4);

// "ZeRO-3", "ZeRO-2 + recomputation", or "" when none of the eight fits.
std::string what_fits(const ShareFigures& f, const GpuModel& gpu);

}  // namespace onegpu::trainer
