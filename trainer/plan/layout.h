#pragma once
// Where every rank sits. world = pp × dp, numbered stage-major: rank = stage·dp + d, so the dp
// ranks of a stage are neighbours (one machine of 8 holds an expert-parallel group of 8).
// Inside a stage, dp index d belongs to expert group d / ep and holds expert slice d % ep:
//   dp=2 ep=2, 16 experts: rank 0 holds experts 0–7, rank 1 holds 8–15 (0-based).
// Attention, norms and router are replicated over the stage's dp ranks (the dense group);
// an expert's weights over the ranks that hold that slice (the expert group, dp/ep ranks).
#include <vector>

#include "trainer/plan/config.h"

namespace onegpu::trainer {

struct RankCoord {
  int stage = 0;     // pipeline stage
  int dp = 0;        // data-parallel index within the stage, 0..dp-1
  int ep = 0;        // expert slice, dp % ep
  int ep_group = 0;  // which expert-parallel group of the stage, dp / ep
  bool operator==(const RankCoord&) const = default;
};

class Layout {
 public:
  explicit Layout(const RunConfig& cfg);  // validates cfg

  const RunConfig& config() const { return cfg_; }
  int world() const { return cfg_.world(); }

  RankCoord coord(int rank) const;
  int rank_of(int stage, int dp_index) const;

  // Experts of every layer this rank holds: [first, first + count).
  int first_expert(int rank) const;
  int expert_count() const { return cfg_.experts_per_rank(); }
  bool holds_expert(int rank, int expert) const;
  int expert_owner(int rank, int expert) const;  // rank of rank's expert group holding it

  // Model chunks (virtual stages) of a stage, in local order: stage, stage+pp, ...
  std::vector<int> chunks_of_stage(int stage) const;
  int stage_of_chunk(int chunk) const { return chunk % cfg_.pp; }
  int first_layer(int chunk) const { return chunk * cfg_.layers_per_chunk(); }
  int end_layer(int chunk) const { return (chunk + 1) * cfg_.layers_per_chunk(); }
  int chunk_of_layer(int layer) const { return layer / cfg_.layers_per_chunk(); }

  // Groups, members in rank order.
  std::vector<int> dense_group(int rank) const;      // all-reduce of attention/router grads
  std::vector<int> expert_group(int rank) const;     // all-reduce of this rank's expert grads
  std::vector<int> all_to_all_group(int rank) const; // token dispatch / combine
  int dense_group_id(int rank) const { return coord(rank).stage; }
  int expert_group_id(int rank) const;
  int all_to_all_group_id(int rank) const;

  // Pipeline neighbour holding `chunk` for the same dp index, or -1 outside the model.
  int rank_of_chunk(int chunk, int dp_index) const;

  // 8 ranks per machine (a node): used to choose NVLink or InfiniBand.
  static constexpr int kRanksPerNode = 8;
  static int node_of(int rank, int ranks_per_node = kRanksPerNode) { return rank / ranks_per_node; }

 private:
  RunConfig cfg_;
};

}  // namespace onegpu::trainer
