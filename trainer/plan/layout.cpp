#include "trainer/plan/layout.h"

#include <string>

#include "trainer/error.h"

namespace onegpu::trainer {

Layout::Layout(const RunConfig& cfg) : cfg_(cfg) { validate(cfg_); }

RankCoord Layout::coord(int rank) const {
  if (rank < 0 || rank >= world())
    throw Error("rank " + std::to_string(rank) + " is outside a world of " +
                std::to_string(world()));
  RankCoord c;
  c.stage = rank / cfg_.dp;
  c.dp = rank % cfg_.dp;
  c.ep = c.dp % cfg_.ep;
  c.ep_group = c.dp / cfg_.ep;
  return c;
}

int Layout::rank_of(int stage, int dp_index) const { return stage * cfg_.dp + dp_index; }

int Layout::first_expert(int rank) const { return coord(rank).ep * expert_count(); }

bool Layout::holds_expert(int rank, int expert) const {
  const int f = first_expert(rank);
  return expert >= f && expert < f + expert_count();
}

int Layout::expert_owner(int rank, int expert) const {
  const RankCoord c = coord(rank);
  return rank_of(c.stage, c.ep_group * cfg_.ep + expert / expert_count());
}

std::vector<int> Layout::chunks_of_stage(int stage) const {
  std::vector<int> out;
  for (int v = 0; v < cfg_.vstages; ++v) out.push_back(v * cfg_.pp + stage);
  return out;
}

std::vector<int> Layout::dense_group(int rank) const {
  const RankCoord c = coord(rank);
  std::vector<int> g;
  for (int d = 0; d < cfg_.dp; ++d) g.push_back(rank_of(c.stage, d));
  return g;
}

std::vector<int> Layout::expert_group(int rank) const {
  const RankCoord c = coord(rank);
  std::vector<int> g;
  for (int d = c.ep; d < cfg_.dp; d += cfg_.ep) g.push_back(rank_of(c.stage, d));
  return g;
}

std::vector<int> Layout::all_to_all_group(int rank) const {
  const RankCoord c = coord(rank);
  std::vector<int> g;
  for (int e = 0; e < cfg_.ep; ++e) g.push_back(rank_of(c.stage, c.ep_group * cfg_.ep + e));
  return g;
}

int Layout::expert_group_id(int rank) const {
  const RankCoord c = coord(rank);
  return c.stage * cfg_.ep + c.ep;
}

int Layout::all_to_all_group_id(int rank) const {
  const RankCoord c = coord(rank);
  return c.stage * (cfg_.dp / cfg_.ep) + c.ep_group;
}

int Layout::rank_of_chunk(int chunk, int dp_index) const {
  if (chunk < 0 || chunk >= cfg_.chunks()) return -1;
  return rank_of(stage_of_chunk(chunk), dp_index);
}

}  // namespace onegpu::trainer
