#include <gtest/gtest.h>

#include <set>
#include <string>

#include "trainer/error.h"
#include "trainer/plan/layout.h"

namespace onegpu::trainer {
namespace {

RunConfig cfg(int dp, int ep, int pp, int layers = 8, int experts = 16) {
  RunConfig c;
  c.dp = dp;
  c.ep = ep;
  c.pp = pp;
  c.layers = layers;
  c.experts = experts;
  c.microbatches = std::max(pp, 1);
  return c;
}

std::string error_of(const RunConfig& c) {
  try {
    validate(c);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Layout, TwoCopies) {
  Layout L(cfg(2, 1, 1));
  EXPECT_EQ(L.world(), 2);
  EXPECT_EQ(L.dense_group(1), (std::vector<int>{0, 1}));
  EXPECT_EQ(L.expert_group(0), (std::vector<int>{0, 1}));  // ep=1: every rank holds all experts
  EXPECT_EQ(L.all_to_all_group(0), (std::vector<int>{0}));
  EXPECT_EQ(L.first_expert(1), 0);
  EXPECT_EQ(L.expert_count(), 16);
}

TEST(Layout, ExpertsSplitInHalf) {
  Layout L(cfg(2, 2, 1));
  EXPECT_EQ(L.first_expert(0), 0);  // experts 1–8 in the storyboard's 1-based words
  EXPECT_EQ(L.first_expert(1), 8);  // experts 9–16
  EXPECT_EQ(L.expert_count(), 8);
  EXPECT_TRUE(L.holds_expert(1, 11));
  EXPECT_FALSE(L.holds_expert(0, 11));
  EXPECT_EQ(L.expert_owner(0, 11), 1);
  EXPECT_EQ(L.dense_group(0), (std::vector<int>{0, 1}));   // attention replicated on both
  EXPECT_EQ(L.expert_group(1), (std::vector<int>{1}));     // expert 9–16 only on rank 1
  EXPECT_EQ(L.all_to_all_group(0), (std::vector<int>{0, 1}));
}

TEST(Layout, FourGpusTwoStages) {
  Layout L(cfg(2, 2, 2));
  EXPECT_EQ(L.world(), 4);
  EXPECT_EQ(L.coord(0), (RankCoord{0, 0, 0, 0}));
  EXPECT_EQ(L.coord(3), (RankCoord{1, 1, 1, 0}));
  EXPECT_EQ(L.first_layer(1), 4);  // stage 2 holds layers 5–8
  EXPECT_EQ(L.rank_of_chunk(1, 0), 2);
  EXPECT_EQ(L.rank_of_chunk(2, 0), -1);
  EXPECT_EQ(L.dense_group(2), (std::vector<int>{2, 3}));
  EXPECT_EQ(L.all_to_all_group(3), (std::vector<int>{2, 3}));
}

TEST(Layout, FiveHundredTwelve) {
  Layout L(cfg(64, 8, 8, 32, 64));
  EXPECT_EQ(L.world(), 512);
  EXPECT_EQ(L.expert_count(), 8);  // 8 of the 64 experts on each GPU
  EXPECT_EQ(L.end_layer(0), 4);  // 4 of the 32 layers per stage
  // Rank 0 ("GPU 1") holds layers 0–3 and experts 0–7; its 7 neighbours the other 56.
  EXPECT_EQ(L.first_layer(0), 0);
  std::set<int> experts;
  for (int r : L.all_to_all_group(0)) {
    EXPECT_EQ(Layout::node_of(r), 0);  // an expert group is one machine
    for (int e = 0; e < L.expert_count(); ++e) experts.insert(L.first_expert(r) + e);
  }
  EXPECT_EQ(experts.size(), 64u);
  EXPECT_EQ(L.dense_group(511).size(), 64u);
  EXPECT_EQ(L.expert_group(511).size(), 8u);
  // Every rank appears in exactly one group of each kind.
  std::set<int> a2a_ids, expert_ids;
  for (int r = 0; r < 512; ++r) {
    a2a_ids.insert(L.all_to_all_group_id(r));
    expert_ids.insert(L.expert_group_id(r));
    const auto g = L.expert_group(r);
    for (int m : g) EXPECT_EQ(L.first_expert(m), L.first_expert(r));
  }
  EXPECT_EQ(a2a_ids.size(), 64u);
  EXPECT_EQ(expert_ids.size(), 64u);
}

TEST(Layout, RankCoordRoundTrips) {
  Layout L(cfg(8, 4, 4));
  for (int r = 0; r < L.world(); ++r) {
    const RankCoord c = L.coord(r);
    EXPECT_EQ(L.rank_of(c.stage, c.dp), r);
    EXPECT_EQ(c.ep_group * 4 + c.ep, c.dp);
  }
  EXPECT_THROW(L.coord(32), Error);
}

TEST(Validate, NamesTheRuleBroken) {
  EXPECT_EQ(error_of(cfg(3, 3, 1)), "16 experts do not split evenly over ep=3");
  EXPECT_EQ(error_of(cfg(4, 3, 1)), "ep must divide dp (ep=3, dp=4)");
  EXPECT_EQ(error_of(cfg(1, 1, 3)), "layers must split over pp x vstages (8 layers, pp=3, vstages=1)");
  RunConfig c = cfg(1, 1, 4);
  c.microbatches = 2;
  EXPECT_EQ(error_of(c), "1F1B needs at least pp microbatches (pp=4, microbatches=2)");
  c.schedule = Schedule::GPipe;
  EXPECT_EQ(error_of(c), "");  // GPipe runs with any number of microbatches
  c.schedule = Schedule::Interleaved;
  c.vstages = 2;
  c.microbatches = 6;
  EXPECT_EQ(error_of(c), "interleaved 1F1B needs microbatches to be a multiple of pp (pp=4, microbatches=6)");
  c.schedule = Schedule::OneFOneB;
  c.microbatches = 8;
  EXPECT_EQ(error_of(c), "vstages=2 needs the interleaved schedule (got 1f1b)");
  EXPECT_EQ(error_of(cfg(0, 1, 1)), "dp must be at least 1 (got 0)");
  EXPECT_EQ(error_of(cfg(2, -1, 1)), "ep must be at least 1 (got -1)");
  c = cfg(1, 1, 1);
  c.microbatches = 0;
  EXPECT_EQ(error_of(c), "microbatches must be at least 1 (got 0)");
  c = cfg(1, 1, 1);
  c.top_k = 17;
  EXPECT_EQ(error_of(c), "top-k=17 cannot exceed the 16 experts");
  c = cfg(1, 1, 1);
  c.sizes.params_per_expert = -5;
  EXPECT_EQ(error_of(c), "parameters per expert cannot be negative (got -5)");
  EXPECT_THROW(Layout(cfg(3, 3, 1)), Error);
}

TEST(Validate, ParsesScheduleNames) {
  EXPECT_EQ(parse_schedule("zb1"), Schedule::ZeroBubbleH1);
  EXPECT_EQ(parse_schedule("interleaved"), Schedule::Interleaved);
  EXPECT_THROW(parse_schedule("pipedream"), Error);
}

}  // namespace
}  // namespace onegpu::trainer
