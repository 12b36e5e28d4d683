#include "app/live/run_state.h"

#include <algorithm>
#include <cmath>

namespace onegpu::app {

using trainer::Event;
using trainer::EventKind;

void RunState::attach(std::shared_ptr<const LiveRun> run) {
  run_ = std::move(run);
  steps_.clear();
  history_.clear();
  resident_.clear();
  marked_.clear();
  dropped_.assign(run_ && run_->events ? run_->events->producers() : 0, 0);
  fill_ = 0;
  seen_ = 0;
}

std::size_t RunState::drain() {
  if (!run_ || !run_->events) return 0;
  trainer::EventStream& s = *run_->events;
  double fill = 0;
  for (std::size_t p = 0; p < s.producers(); ++p)
    fill = std::max(fill, (double)s.fill(p) / (double)s.capacity(p));
  fill_ = fill;
  const std::size_t n = s.drain([this](const Event& e) { consume(e); });
  // The stream's own counters also cover drops whose marker has not been placed yet.
  for (std::size_t p = 0; p < s.producers() && p < dropped_.size(); ++p)
    dropped_[p] = std::max<std::uint64_t>(dropped_[p], s.dropped(p));
  return n;
}

std::uint64_t RunState::dropped() const {
  std::uint64_t n = 0;
  for (auto d : dropped_) n += d;
  return n;
}

const RunStep* RunState::last_complete() const {
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it)
    if (it->complete) return &*it;
  return nullptr;
}

const RunStep* RunState::find(int step) const {
  for (const auto& s : steps_)
    if (s.step == step) return &s;
  return nullptr;
}

RunStep& RunState::record(int step) {
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it)
    if (it->step == step) return *it;
  RunStep r;
  r.step = step;
  if (run_) {
    r.router.assign((std::size_t)run_->model.n_layers * run_->model.n_experts, 0);
    r.ops.reserve(run_->plan_of(step).ops.size());
  }
  auto pos = std::find_if(steps_.begin(), steps_.end(), [&](const RunStep& s) { return s.step > step; });
  steps_.insert(pos, std::move(r));
  trim();
  for (auto& s : steps_)
    if (s.step == step) return s;
  // A late event of a step already let go: it lands in a scratch record nobody draws.
  scratch_ = RunStep{};
  return scratch_;
}

void RunState::consume(const Event& e) {
  ++seen_;
  switch (e.kind) {
    case EventKind::Dropped: {
      const std::size_t lane = e.id;
      if (lane >= dropped_.size()) dropped_.resize(lane + 1, 0);
      // Each marker announces the drops since the last one; the stream's own counter (read in
      // drain) may be ahead of the markers, never behind.
      if (lane >= marked_.size()) marked_.resize(lane + 1, 0);
      marked_[lane] += (std::uint64_t)e.bytes;
      dropped_[lane] = std::max(dropped_[lane], marked_[lane]);
      return;
    }
    default: break;
  }
  if (e.kind == EventKind::StepMemory && e.rank >= 0 && e.detail < kMemCategories) {
    if ((int)resident_.size() <= e.rank) resident_.resize((std::size_t)e.rank + 1);
    resident_[(std::size_t)e.rank].current[e.detail] = e.bytes;
    resident_[(std::size_t)e.rank].peak[e.detail] = (std::int64_t)e.value;
    if (e.step < 0) return;  // the run's memory before its first step
  }
  RunStep& s = record(e.step);
  switch (e.kind) {
    case EventKind::Forward:
    case EventKind::Backward:
    case EventKind::WeightGradient:
    case EventKind::Send:
    case EventKind::Recv:
    case EventKind::AllReduce:
    case EventKind::ReduceScatter:
    case EventKind::AllGather:
    case EventKind::AllToAll:
    case EventKind::Broadcast:
    case EventKind::Update: {
      OpSpan o;
      o.id = e.id;
      o.rank = e.rank;
      o.microbatch = e.microbatch;
      o.kind = e.kind;
      o.detail = e.detail;
      o.layer = e.layer;
      o.chunk = e.chunk;
      o.peer = e.peer;
      o.vbegin = e.virtual_begin;
      o.vend = e.virtual_end;
      o.wbegin = e.wall_begin_ns;
      o.wend = e.wall_end_ns;
      o.bytes = e.bytes;
      o.measured_s = e.value;
      if (s.wall_begin == 0 || (o.wbegin > 0 && o.wbegin < s.wall_begin)) s.wall_begin = o.wbegin;
      s.bytes_by_kind[(std::size_t)e.kind] += e.bytes;
      s.ops.push_back(o);
      return;
    }
    case EventKind::StepMemory:
      if (e.rank >= 0 && e.detail < kMemCategories) {
        if ((int)s.memory.size() <= e.rank) s.memory.resize((std::size_t)e.rank + 1);
        s.memory[(std::size_t)e.rank].current[e.detail] = e.bytes;
        s.memory[(std::size_t)e.rank].peak[e.detail] = (std::int64_t)e.value;
      }
      return;
    case EventKind::MemoryLevel: s.activations.push_back({e.id, e.bytes}); return;
    case EventKind::Probe:
      if (e.detail == (std::uint8_t)trainer::ProbeKind::WeightsFingerprint) s.weights_fingerprint = (std::uint64_t)e.bytes;
      else if (e.detail == (std::uint8_t)trainer::ProbeKind::LearningRate) s.lr = e.value;
      else if (e.detail == (std::uint8_t)trainer::ProbeKind::HeldOutLoss) s.heldout = e.value;
      else s.probes.push_back({(trainer::ProbeKind)e.detail, e.microbatch, e.layer, e.bytes, e.value});
      return;
    case EventKind::Loss: s.microbatch_loss.push_back(e.value); return;
    case EventKind::GradNorm: s.grad_norm = e.value; return;
    case EventKind::RouterCount: {
      const std::size_t i = (std::size_t)e.layer * (run_ ? run_->model.n_experts : 0) + (std::size_t)e.peer;
      if (i < s.router.size()) s.router[i] = e.bytes;
      return;
    }
    case EventKind::Traffic: s.traffic.push_back({e.layer, e.rank, e.peer, e.bytes}); return;
    case EventKind::StepEnd:
      s.loss = e.value;
      s.by_hand = e.detail != 0;
      s.virtual_s = e.virtual_end;
      s.wall_s = (double)(e.wall_end_ns - e.wall_begin_ns) * 1e-9;
      // A step taken by hand spent most of its wall time waiting for the learner: no speed.
      s.tokens_per_s = s.by_hand ? NAN : s.wall_s > 0 ? (double)e.bytes / s.wall_s : 0;
      close(s);
      return;
    default: return;
  }
}

trainer::Timeline RunState::timeline(const RunStep& s) const {
  trainer::Timeline tl;
  if (!run_) return tl;
  const trainer::Plan& plan = run_->plan_of(s.step);
  tl.ops.assign(plan.ops.size(), trainer::OpTime{});
  for (const OpSpan& o : s.ops) {
    if (o.id >= tl.ops.size()) continue;
    trainer::OpTime& t = tl.ops[o.id];
    t.begin = o.vbegin;
    t.end = o.vend;
    t.wall_begin_ns = o.wbegin;
    t.wall_end_ns = o.wend;
    t.measured_s = o.measured_s;
    tl.end = std::max(tl.end, o.vend);
  }
  return tl;
}

void RunState::close(RunStep& s) {
  s.complete = true;
  if (run_) {
    const trainer::Plan& plan = run_->plan_of(s.step);
    s.textbook = trainer::textbook_bubble(plan.config);
    s.spans_whole = s.ops.size() == plan.ops.size();
    if (s.spans_whole) {
      const trainer::Summary sm = trainer::summarize(plan, timeline(s));
      s.rank_idle = sm.rank_idle;
      double idle = 0;
      for (double v : sm.stage_idle) idle += v;
      s.bubble = sm.stage_idle.empty() ? 0.0 : idle / (double)sm.stage_idle.size();
    }
  }
  StepLine line{s.step,      s.loss, s.grad_norm, s.tokens_per_s, s.bubble, s.textbook, s.virtual_s,
                s.wall_s,    s.lr,   s.heldout,   s.weights_fingerprint};
  history_.push_back(line);
  while (history_.size() > kHistoryLines) history_.pop_front();
  trim();
}

void RunState::trim() {
  // Whole records for the last kFullSteps steps only; an unfinished record at the front is
  // dropped too once newer ones push it out (its step line never came).
  while (steps_.size() > kFullSteps) steps_.pop_front();
}

}  // namespace onegpu::app
