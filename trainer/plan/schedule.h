#pragma once
// Pipeline schedules as data: for every stage, the order in which it runs the forward (F),
// backward (B) and weight-gradient (W) passes of its model chunks for each microbatch.
// compile_plan() expands each item into ops (receives, compute parts, all-to-alls, sends).
#include <cstdint>
#include <vector>

#include "trainer/plan/config.h"

namespace onegpu::trainer {

enum class Pass : std::uint8_t { F, B, W };  // B is the whole backward unless W items exist

struct ScheduleItem {
  Pass pass = Pass::F;
  int local_chunk = 0;  // 0..vstages-1; the model chunk is local_chunk * pp + stage
  int microbatch = 0;
  bool operator==(const ScheduleItem&) const = default;
};

// The order for one stage. Every schedule is a valid order: each stage's list is consistent
// with some execution respecting F(c, m) before F(c+1, m), B(c+1, m) before B(c, m), and F
// before B before W of the same chunk and microbatch.
std::vector<ScheduleItem> stage_order(const RunConfig& cfg, int stage);

std::vector<ScheduleItem> gpipe_order(int pp, int microbatches, int stage);
std::vector<ScheduleItem> one_f_one_b_order(int pp, int microbatches, int stage);
std::vector<ScheduleItem> interleaved_order(int pp, int vstages, int microbatches, int stage);
// ZB-H1 for all stages at once (its order comes from a unit-time list schedule).
std::vector<std::vector<ScheduleItem>> zb_h1_orders(int pp, int microbatches);

}  // namespace onegpu::trainer
