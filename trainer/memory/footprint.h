#pragma once
// The memory formula: the bytes one rank holds, by category, for any model shape and split,
// computed from the shape alone (no allocation). tests/trainer/memory/footprint_test.cpp holds it
// against the tracking allocator's measured bytes at tiny scale: exact for weights, gradients
// and optimizer state; within a stated tolerance for activations and communication buffers,
// which depend on where the router sends tokens and on what is briefly live inside an op.
//
// Use:
//   FootprintSplit s;  s.dp = 2; s.ep = 2; s.pp = 2; s.microbatches = 4;
//   RankFootprint f = rank_footprint(model, s, /*rank=*/0);
//   f.bytes[MemCategory::Optimizer] ...
//
// What a rank holds (18 bytes a weight unsharded: bf16 weight 2, fp32 gradient 4, fp32 master
// 4, two fp32 Adam moments 4 + 4), n = its weights (its layers' attention, norms and router, its
// slice of every held layer's experts, the embedding on the first stage, the final norm and head
// on the last):
//   zero 0   2n + 4n + 12n
//   zero 1   the 12 bytes of optimizer state split over the ranks holding copies of a weight:
//            dense weights over the stage's dp ranks, an expert's weights over the dp/ep ranks
//            that hold that expert (the trainer runs it: ParallelOptions::zero)
//   zero 2   the gradients split the same way too        (formula only: the trainer runs 0 and 1)
//   zero 3   and the bf16 weights                        (formula only)
// The n weights one collective covers (a chunk's dense weights, or its experts) are split in
// contiguous pieces, member i of d holding [n·i/d, n·(i+1)/d), as the trainer splits them.
//
// Activations: what the schedule's in-flight microbatches keep for backward (per layer and
// microbatch the tensors LayerCache and Routing hold, model.h / moe.h), times the microbatch
// chunks live at once on this rank's stage (GPipe: all; 1F1B: pp − stage; ZB-H1: pp, the
// deferred weight passes' microbatches included; interleaved: Megatron's warm-up + 1), plus
// one layer's backward working set and, on the last stage, the logits and their gradient.
// Communication: the largest single buffer a collective or a send uses (this trainer reduces
// a whole layer's gradients in one buffer; StorageRules can cap it at a bucket).
// Activation recomputation (StorageRules::recompute) is formula only: the trainer keeps all.
#include <array>
#include <cstdint>

#include "trainer/memory/tracker.h"
#include "trainer/model/config.h"
#include "trainer/plan/config.h"

namespace onegpu::trainer {

struct FootprintSplit {
  int dp = 1, ep = 1, pp = 1, vstages = 1;
  int microbatches = 1;                    // per data-parallel rank per step
  Schedule schedule = Schedule::OneFOneB;
  int texts_per_microbatch = 1;            // texts of seq_len tokens in one microbatch
  int seq_len = 0;                         // 0: the model's
  int zero = 0;                            // 0, 1 (the trainer runs both), 2, 3 (formula only)
};

// How activations and buffers are kept. The defaults are this trainer's: fp32 values, the
// attention matrix stored, a layer's bf16 weights unpacked to fp32 while it runs, a whole
// layer's gradients reduced in one buffer. A large run keeps bf16 activations, recomputes
// attention (flash attention), reads bf16 weights directly and reduces in buckets.
struct StorageRules {
  int bytes_per_value = 4;
  bool attention_matrix = true;
  bool fp32_weight_copy = true;
  std::int64_t grad_bucket_bytes = 0;  // 0: one buffer per layer (or embedding, or head)
  // Activation recomputation: keep only each layer's input (T·D) per microbatch in flight and
  // redo the forward during backward, so one layer's full set is live at a time.
  bool recompute = false;
};

struct RankFootprint {
  std::int64_t params = 0;         // weights this rank holds (a copy of or a slice)
  std::int64_t dense_params = 0;   // of which embedding, attention, norms, router, head
  std::int64_t expert_params = 0;  // of which its experts
  int dense_group = 1, expert_group = 1;  // ranks sharing a copy of each (the ZeRO divisors)
  std::int64_t sharded_params = 0; // its pieces when sharded: about dense/dense_group + expert/expert_group
  double in_flight = 0;            // microbatches (whole stage) whose activations are held at the peak
  std::array<std::int64_t, kMemCategoryCount> bytes{};  // by MemCategory
  std::int64_t operator[](MemCategory c) const { return bytes[static_cast<std::size_t>(c)]; }
  std::int64_t params_bytes() const;  // weights + gradients + optimizer
  std::int64_t total() const;
};

// Throws Error (one line) when the split is not valid for the model (plan rules) or zero is
// not 0..3.
RankFootprint rank_footprint(const ModelConfig& model, const FootprintSplit& split, int rank,
                             const StorageRules& rules = {});

// Chunks of one microbatch (a chunk is layers / (pp·vstages) layers) whose activations
// `stage` holds at once under the schedule.
int chunks_in_flight(Schedule s, int pp, int vstages, int microbatches, int stage);

// Member i's piece of n weights split over d ranks: n·(i+1)/d − n·i/d.
std::int64_t shard_size(std::int64_t n, int d, int i);
std::int64_t shard_begin(std::int64_t n, int d, int i);

}  // namespace onegpu::trainer
