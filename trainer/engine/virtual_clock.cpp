#include "trainer/engine/virtual_clock.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "trainer/error.h"

namespace onegpu::trainer {

CostModel CostModel::for_link(std::string_view name) {
  CostModel m;
  if (name == "nvlink") {
    m.intra_node = links::kNVLink;
  } else if (name == "ib") {
    m.intra_node = links::kInfiniBand;
  } else if (name == "pcie") {
    m.intra_node = links::kPCIe;
  } else {
    throw Error("unknown link '" + std::string(name) + "' (expected nvlink, ib or pcie)");
  }
  m.inter_node = links::kInfiniBand;
  return m;
}

CostModel CostModel::unit() {
  CostModel m;
  m.free_comm = true;
  m.compute = ComputeCost::Unit;
  return m;
}

const Link& CostModel::link(int a, int b) const {
  const int n = std::max(ranks_per_node, 1);
  return a / n == b / n ? intra_node : inter_node;
}

double CostModel::compute_cost(const Plan& plan, const Op& op, double measured_s) const {
  if (compute == ComputeCost::Measured) return measured_s * measured_scale;
  double per_stage = 0;
  switch (op.kind) {
    case OpKind::Forward: per_stage = forward; break;
    case OpKind::Backward: per_stage = backward; break;
    case OpKind::BackwardInput: per_stage = backward_input; break;
    case OpKind::BackwardWeight: per_stage = backward_weight; break;
    case OpKind::Update: return update;
    default: return 0;
  }
  // A stage's unit covers all its layers; an op covers a share of them. With experts split
  // (ep > 1) a layer's work is attention+router half, experts half, combine ~nothing.
  const auto& cfg = plan.config;
  const double layers_per_stage = static_cast<double>(cfg.layers) / cfg.pp;
  double share = (op.layer_end - op.layer_begin) / layers_per_stage;
  if (op.part == Part::Attention || op.part == Part::Experts) share *= 0.5;
  if (op.part == Part::Combine) share = 0;
  return per_stage * share;
}

double CostModel::p2p_cost(int from, int to, std::int64_t bytes) const {
  if (free_comm) return 0;
  const Link& l = link(from, to);
  return l.latency_s + static_cast<double>(bytes) / l.bandwidth_bytes_per_s;
}

double ring_phase_seconds(const Link& l, int n, std::int64_t bytes) {
  if (n < 2) return 0;
  return (n - 1) * l.latency_s + static_cast<double>(n - 1) / n * static_cast<double>(bytes) / l.bandwidth_bytes_per_s;
}

const Link& CostModel::group_link(const std::vector<std::int32_t>& ranks) const {
  const Link* l = &link(ranks.front(), ranks.front());
  for (int r : ranks) {
    const Link& x = link(ranks.front(), r);
    if (x.bandwidth_bytes_per_s < l->bandwidth_bytes_per_s) l = &x;
  }
  return *l;
}

double CostModel::collective_cost(const Collective& c) const {
  if (free_comm || c.ranks.size() < 2) return 0;
  // The slowest link among members decides (any pair across machines means InfiniBand).
  const int n = static_cast<int>(c.ranks.size());
  const Link& l = group_link(c.ranks);
  switch (c.kind) {
    case OpKind::AllReduce:  // ring: reduce-scatter then all-gather
      return 2 * ring_phase_seconds(l, n, c.bytes);
    case OpKind::AllToAll:  // each member keeps 1/n of its buffer and sends the rest
    case OpKind::ReduceScatter:  // one ring phase each: half an all-reduce
    case OpKind::AllGather:
      return ring_phase_seconds(l, n, c.bytes);
    case OpKind::Broadcast:  // pipelined tree
      return std::ceil(std::log2(n)) * l.latency_s + static_cast<double>(c.bytes) / l.bandwidth_bytes_per_s;
    default: return l.latency_s + static_cast<double>(c.bytes) / l.bandwidth_bytes_per_s;
  }
}

VirtualClock::VirtualClock(const Plan& plan, CostModel model)
    : plan_(plan),
      model_(model),
      rank_free_(static_cast<std::size_t>(plan.world()), 0.0),
      send_free_(static_cast<std::size_t>(plan.world()), 0.0) {
  tl_.ops.assign(plan.ops.size(), OpTime{});
}

void VirtualClock::reset() {
  std::fill(tl_.ops.begin(), tl_.ops.end(), OpTime{});
  tl_.end = 0;
  std::fill(rank_free_.begin(), rank_free_.end(), 0.0);
  std::fill(send_free_.begin(), send_free_.end(), 0.0);
}

double VirtualClock::begin_of(const Task& task) const {
  if (task.collective) {
    double begin = 0;
    for (int r : plan_.collectives[task.index].ranks)
      begin = std::max(begin, rank_free_[static_cast<std::size_t>(r)]);
    return begin;
  }
  const Op& op = plan_.ops[task.index];
  const double ready = rank_free_[static_cast<std::size_t>(op.rank)];
  if (op.kind == OpKind::Send) return std::max(ready, send_free_[static_cast<std::size_t>(op.rank)]);
  if (op.kind == OpKind::Recv) return std::max(ready, tl_.ops[static_cast<std::size_t>(op.match)].begin);
  return ready;
}

void VirtualClock::complete(const Task& task, double measured_s) {
  if (task.collective) {
    const Collective& c = plan_.collectives[task.index];
    double begin = 0;
    for (int r : c.ranks) begin = std::max(begin, rank_free_[static_cast<std::size_t>(r)]);
    const double end = begin + model_.collective_cost(c);
    for (std::size_t i = 0; i < c.ops.size(); ++i) {
      auto& t = tl_.ops[c.ops[i]];
      const auto r = static_cast<std::size_t>(c.ranks[i]);
      t.ready = rank_free_[r];
      t.begin = begin;
      t.end = end;
      t.measured_s = measured_s;
      rank_free_[r] = end;
    }
    tl_.end = std::max(tl_.end, end);
    return;
  }
  const Op& op = plan_.ops[task.index];
  const auto r = static_cast<std::size_t>(op.rank);
  auto& t = tl_.ops[op.id];
  t.ready = rank_free_[r];
  t.measured_s = measured_s;
  if (op.kind == OpKind::Send) {
    t.begin = std::max(t.ready, send_free_[r]);
    t.end = t.begin + model_.p2p_cost(op.rank, op.peer, op.bytes);
    send_free_[r] = t.end;
  } else if (op.kind == OpKind::Recv) {
    const OpTime& s = tl_.ops[static_cast<std::size_t>(op.match)];
    t.begin = std::max(t.ready, s.begin);
    t.end = std::max(t.ready, s.end);
    rank_free_[r] = t.end;
  } else {
    t.begin = t.ready;
    t.end = t.begin + model_.compute_cost(plan_, op, measured_s);
    rank_free_[r] = t.end;
  }
  tl_.end = std::max(tl_.end, t.end);
}

Timeline simulate(const Plan& plan, const CostModel& model) {
  DependencyTracker tracker(plan);
  VirtualClock clock(plan, model);
  std::vector<Task> ready, next;
  tracker.start(ready);
  while (!ready.empty()) {
    next.clear();
    for (const Task& t : ready) {
      clock.complete(t);
      tracker.complete(t, next);
    }
    std::swap(ready, next);
  }
  if (!tracker.finished())
    throw Error("plan deadlocks after " + std::to_string(tracker.ops_done()) + " of " +
                std::to_string(plan.ops.size()) + " ops: " + tracker.describe_stuck());
  return std::move(clock.timeline());  // no copy: a 512-rank timeline is megabytes
}

Summary summarize(const Plan& plan, const Timeline& tl) {
  Summary s;
  const int world = plan.world();
  auto is_pass = [](const Op& o) { return o.kind == OpKind::Forward || o.is_backward(); };
  std::vector<double> busy(static_cast<std::size_t>(world), 0.0);
  for (const Op& o : plan.ops) {
    const OpTime& t = tl.ops[o.id];
    s.step_time = std::max(s.step_time, t.end);
    if (is_pass(o)) {
      s.pipeline_end = std::max(s.pipeline_end, t.end);
      busy[static_cast<std::size_t>(o.rank)] += t.end - t.begin;
    }
  }
  const bool split = plan.config.schedule == Schedule::ZeroBubbleH1;
  s.rank_idle.resize(static_cast<std::size_t>(world));
  s.peak_live.assign(static_cast<std::size_t>(world), 0);
  s.peak_live_microbatches.resize(static_cast<std::size_t>(world));
  s.stage_idle.assign(static_cast<std::size_t>(plan.config.pp), 0.0);
  for (int r = 0; r < world; ++r) {
    const auto ri = static_cast<std::size_t>(r);
    s.rank_idle[ri] = s.pipeline_end > 0 ? 1.0 - busy[ri] / s.pipeline_end : 0.0;
    s.mean_idle += s.rank_idle[ri] / world;
    s.stage_idle[static_cast<std::size_t>(plan.layout.coord(r).stage)] +=
        s.rank_idle[ri] / plan.config.dp;
    // Activations of (chunk, microbatch) are held from its first forward op to its last
    // backward op (W when backward is split).
    std::set<std::pair<int, int>> live;
    int peak = 0;
    for (std::uint32_t id : plan.programs[ri]) {
      const Op& o = plan.ops[id];
      const bool chunk_start = o.layer_begin == plan.layout.first_layer(o.chunk);
      if (o.kind == OpKind::Forward && (o.part == Part::Chunk || o.part == Part::Attention) &&
          chunk_start) {
        live.insert({o.chunk, o.microbatch});
        peak = std::max(peak, static_cast<int>(live.size()));
      }
      const bool last_backward =
          split ? o.kind == OpKind::BackwardWeight
                : (o.kind == OpKind::Backward &&
                   (o.part == Part::Chunk || (o.part == Part::Attention && chunk_start)));
      if (last_backward) live.erase({o.chunk, o.microbatch});
    }
    s.peak_live[ri] = peak;
    s.peak_live_microbatches[ri] = static_cast<double>(peak) / plan.config.vstages;
  }
  return s;
}

double textbook_bubble(const RunConfig& cfg) {
  const double p = cfg.pp, m = cfg.microbatches;
  if (cfg.pp <= 1) return 0.0;
  switch (cfg.schedule) {
    case Schedule::Interleaved: return (p - 1) / (cfg.vstages * m + p - 1);
    case Schedule::ZeroBubbleH1: return (p - 1) / (3 * m + p - 1);
    default: return (p - 1) / (m + p - 1);
  }
}

std::string textbook_formula(const RunConfig& cfg) {
  char b[96];
  const int p = cfg.pp, m = cfg.microbatches;
  switch (cfg.schedule) {
    case Schedule::Interleaved:
      std::snprintf(b, sizeof b, "(p\u22121)/(v\u00b7m+p\u22121) = %d/%d", p - 1, cfg.vstages * m + p - 1);
      break;
    case Schedule::ZeroBubbleH1:
      std::snprintf(b, sizeof b, "(p\u22121)/(3m+p\u22121) = %d/%d", p - 1, 3 * m + p - 1);
      break;
    default: std::snprintf(b, sizeof b, "(p\u22121)/(m+p\u22121) = %d/%d", p - 1, m + p - 1);
  }
  return b;
}

}  // namespace onegpu::trainer
