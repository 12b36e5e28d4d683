#pragma once
// The virtual clock: when each op would begin and end on real devices. Each rank runs its
// program in order; an op begins when its rank is free and its inputs have arrived:
//   compute      begins when the rank is free; lasts its compute cost (measured or unit).
//   Send         eager: begins when the rank is free and its send channel is idle, lasts
//                latency + bytes / bandwidth, and does not hold the rank.
//   Recv         holds the rank until the matching send's data has arrived.
//   collective   begins when the last member arrives; all members end together.
// Links: ranks on the same machine (8 per node) talk over the intra-node link (NVLink or PCIe),
// others over InfiniBand. Collective costs use the ring formulas.
#include <cstdint>
#include <string_view>
#include <string>
#include <vector>

#include "trainer/engine/dependency_tracker.h"
#include "trainer/plan/plan.h"

namespace onegpu::trainer {

struct Link {
  std::string_view name;
  double latency_s = 0;
  double bandwidth_bytes_per_s = 1;
};

namespace links {
// Per-GPU, one direction, rounded: NVLink 4 (H100) 450 GB/s; InfiniBand NDR 400 Gb/s = 50 GB/s;
// PCIe 4.0 x16 about 25 GB/s in practice.
inline constexpr Link kNVLink{"nvlink", 3e-6, 450e9};
inline constexpr Link kInfiniBand{"ib", 5e-6, 50e9};
inline constexpr Link kPCIe{"pcie", 10e-6, 25e9};
}  // namespace links

enum class ComputeCost : std::uint8_t { Measured, Unit };

struct CostModel {
  Link intra_node = links::kNVLink;
  Link inter_node = links::kInfiniBand;
  int ranks_per_node = 8;
  bool free_comm = false;  // every communication takes no time (the textbook's assumption)
  ComputeCost compute = ComputeCost::Measured;
  double measured_scale = 1.0;  // multiplies measured seconds (to pretend a faster device)
  // Unit costs for one stage's share of the model (all its layers) and one microbatch.
  double forward = 1, backward = 2, backward_input = 1, backward_weight = 1, update = 0;

  // --link nvlink | ib | pcie: the link inside a machine (ib: everything over InfiniBand).
  static CostModel for_link(std::string_view name);  // throws Error on an unknown name
  // Unit compute (F=1, B=2, or B=W=1 when split) and free communication.
  static CostModel unit();

  const Link& link(int a, int b) const;
  // The slowest link between a group's first member and any other (a group spanning machines
  // runs at InfiniBand's pace).
  const Link& group_link(const std::vector<std::int32_t>& ranks) const;
  double compute_cost(const Plan& plan, const Op& op, double measured_s) const;
  double p2p_cost(int from, int to, std::int64_t bytes) const;
  double collective_cost(const Collective& c) const;
};

// One phase of a ring over n members moving a buffer of `bytes` per member: n − 1 hops, each
// member sending (n − 1)/n of the buffer. A reduce-scatter or an all-gather is one phase, an
// all-reduce two, an all-to-all costs as one.
double ring_phase_seconds(const Link& l, int n, std::int64_t bytes);

struct OpTime {
  double ready = 0;  // the rank reached the op (collectives: this member arrived)
  double begin = 0;  // inputs arrived: the op really started
  double end = 0;
  std::int64_t wall_begin_ns = 0;  // filled by the engine
  std::int64_t wall_end_ns = 0;
  double measured_s = 0;
};

struct Timeline {
  std::vector<OpTime> ops;  // by op id
  double end = 0;           // latest end
};

// Incremental: feed tasks in any order the DependencyTracker allows.
class VirtualClock {
 public:
  VirtualClock(const Plan& plan, CostModel model);
  // Back to time zero with no op done, keeping the memory (a step of 512 ranks is megabytes).
  void reset();
  // When a ready task begins (its dependencies are complete, so this is already fixed).
  double begin_of(const Task& task) const;
  // Sets the virtual times of the task's op(s); measured_s is the wall cost (compute ops).
  void complete(const Task& task, double measured_s = 0);
  const Timeline& timeline() const { return tl_; }
  Timeline& timeline() { return tl_; }
  const CostModel& model() const { return model_; }

 private:
  const Plan& plan_;
  CostModel model_;
  Timeline tl_;
  std::vector<double> rank_free_, send_free_;
};

// Runs the whole plan on the virtual clock alone (no ops executed). Throws Error
// ("plan deadlocks: rank 3 waits at ...") if some rank can never proceed.
Timeline simulate(const Plan& plan, const CostModel& model);

struct Summary {
  double pipeline_end = 0;  // end of the last forward/backward/weight-gradient op
  double step_time = 0;     // end of the last op (all-reduce and update included)
  std::vector<double> rank_idle;   // per rank: 1 - compute busy / pipeline_end
  std::vector<double> stage_idle;  // per stage: mean of its ranks (the bubble fraction)
  std::vector<int> peak_live;      // per rank: most (chunk, microbatch) activations held at once
  std::vector<double> peak_live_microbatches;  // peak_live / vstages (whole-stage microbatches)
  double mean_idle = 0;            // over all ranks
};
Summary summarize(const Plan& plan, const Timeline& tl);

// The schedule's textbook bubble with equal op costs and free communication, p stages, m
// microbatches: GPipe and 1F1B (p-1)/(m+p-1); interleaved with v chunks per rank
// (p-1)/(v·m+p-1); ZB-H1 (p-1)/(3m+p-1). 0 with one stage.
double textbook_bubble(const RunConfig& cfg);
std::string textbook_formula(const RunConfig& cfg);  // "(p−1)/(m+p−1) = 1/3" style

}  // namespace onegpu::trainer
