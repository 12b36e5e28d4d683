#include "trainer/engine/dependency_tracker.h"

#include <algorithm>

namespace onegpu::trainer {

DependencyTracker::DependencyTracker(const Plan& plan)
    : plan_(plan),
      cursor_(plan.programs.size(), 0),
      done_(plan.ops.size(), 0),
      waiting_recv_(plan.ops.size(), -1),
      arrived_(plan.collectives.size(), 0) {}

void DependencyTracker::reset() {
  std::fill(cursor_.begin(), cursor_.end(), 0);
  std::fill(done_.begin(), done_.end(), 0);
  std::fill(waiting_recv_.begin(), waiting_recv_.end(), -1);
  std::fill(arrived_.begin(), arrived_.end(), 0);
  ops_done_ = 0;
  ranks_done_ = 0;
}

void DependencyTracker::start(std::vector<Task>& ready) {
  for (std::size_t r = 0; r < cursor_.size(); ++r) advance(static_cast<int>(r), ready);
}

void DependencyTracker::advance(int rank, std::vector<Task>& ready) {
  const auto& prog = plan_.programs[static_cast<std::size_t>(rank)];
  const std::size_t at = cursor_[static_cast<std::size_t>(rank)];
  if (at >= prog.size()) {
    ++ranks_done_;
    return;
  }
  const Op& op = plan_.ops[prog[at]];
  if (op.collective >= 0) {
    auto& n = arrived_[static_cast<std::size_t>(op.collective)];
    const auto& c = plan_.collectives[static_cast<std::size_t>(op.collective)];
    if (++n == static_cast<std::int32_t>(c.ops.size()))
      ready.push_back({static_cast<std::uint32_t>(op.collective), true});
    return;
  }
  if (op.kind == OpKind::Recv) {
    if (op.match < 0 || static_cast<std::size_t>(op.match) >= done_.size()) return;  // never
    if (!done_[static_cast<std::size_t>(op.match)]) {
      waiting_recv_[static_cast<std::size_t>(op.match)] = rank;
      return;
    }
  }
  ready.push_back({op.id, false});
}

void DependencyTracker::complete(const Task& task, std::vector<Task>& ready) {
  if (task.collective) {
    const auto& c = plan_.collectives[task.index];
    for (std::uint32_t id : c.ops) {
      done_[id] = 1;
      ++ops_done_;
    }
    for (std::size_t i = 0; i < c.ops.size(); ++i) {
      const int r = c.ranks[i];
      ++cursor_[static_cast<std::size_t>(r)];
      advance(r, ready);
    }
    return;
  }
  const Op& op = plan_.ops[task.index];
  done_[op.id] = 1;
  ++ops_done_;
  ++cursor_[static_cast<std::size_t>(op.rank)];
  advance(op.rank, ready);
  if (op.kind == OpKind::Send) {
    const std::int32_t r = waiting_recv_[op.id];
    if (r >= 0) {
      waiting_recv_[op.id] = -1;
      ready.push_back({static_cast<std::uint32_t>(op.match), false});
    }
  }
}

std::string DependencyTracker::describe_stuck(int limit) const {
  std::string out;
  int n = 0, more = 0;
  for (std::size_t r = 0; r < cursor_.size(); ++r) {
    const auto& prog = plan_.programs[r];
    if (cursor_[r] >= prog.size()) continue;
    if (n >= limit) {
      ++more;
      continue;
    }
    const Op& op = plan_.ops[prog[cursor_[r]]];
    if (!out.empty()) out += "; ";
    out += "rank " + std::to_string(r) + " waits at " + describe(op);
    if (op.kind == OpKind::Recv)
      out += op.match < 0 ? " (no matching send)" : " (send not done)";
    if (op.collective >= 0) {
      const auto& c = plan_.collectives[static_cast<std::size_t>(op.collective)];
      out += " (" + std::to_string(arrived_[static_cast<std::size_t>(op.collective)]) + " of " +
             std::to_string(c.ops.size()) + " arrived)";
    }
    ++n;
  }
  if (more) out += "; and " + std::to_string(more) + " more ranks";
  return out;
}

}  // namespace onegpu::trainer
