#include "app/run/step_reader.h"

#include <algorithm>
#include <string>

#include "trainer/engine/replay.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::app {

using namespace trainer;

double PipelineStep::busy(int rank) const {
  double b = 0;
  for (const PipeOp& o : ops)
    if (o.rank == rank) b += o.end - o.begin;
  return b;
}

const PipeSpan* PipelineStep::span_at(int rank, double v) const {
  for (const PipeSpan& s : spans)
    if (s.rank == rank && s.begin <= v && v < s.end) return &s;
  return nullptr;
}

// ----------------------------------------------------------------------------------------------
// the reader

PipelineStep read_step(const Plan& plan, const Timeline& tl) {
  PipelineStep s;
  s.pp = plan.config.pp;
  s.dp = plan.config.dp;
  s.ep = plan.config.ep;
  s.microbatches = plan.config.microbatches;
  const int world = plan.world();
  s.meet_begin.assign(static_cast<std::size_t>(s.pp), -1.0);
  s.meet_end.assign(static_cast<std::size_t>(s.pp), 0.0);
  std::vector<std::vector<PipeSpan>> by_rank(static_cast<std::size_t>(world));
  for (const Op& op : plan.ops) {
    const OpTime& t = tl.ops[op.id];
    s.step_end = std::max(s.step_end, t.end);
    const bool fwd = op.kind == OpKind::Forward;
    const bool bwd = op.is_backward();
    if (fwd || bwd) {
      s.ops.push_back({op.rank, bwd, op.microbatch, op.layer_begin, op.layer_end, t.begin, t.end});
      // Spans: a rank's ops of one microbatch and direction, joined.
      auto& mine = by_rank[static_cast<std::size_t>(op.rank)];
      auto it = std::find_if(mine.begin(), mine.end(), [&](const PipeSpan& sp) {
        return sp.backward == bwd && sp.microbatch == op.microbatch;
      });
      if (it == mine.end()) mine.push_back({op.rank, bwd, op.microbatch, t.begin, t.end});
      else it->begin = std::min(it->begin, t.begin), it->end = std::max(it->end, t.end);
    } else if (op.kind == OpKind::Send && op.payload != Payload::None) {
      s.handoffs.push_back({op.rank, op.peer, op.payload == Payload::Gradient, op.microbatch, t.begin, t.end});
    } else if (op.kind == OpKind::AllReduce) {
      double& mb = s.meet_begin[static_cast<std::size_t>(op.stage)];
      mb = mb < 0 ? t.begin : std::min(mb, t.begin);
      s.meet_end[static_cast<std::size_t>(op.stage)] = std::max(s.meet_end[static_cast<std::size_t>(op.stage)], t.end);
    }
  }
  for (double& b : s.meet_begin) b = std::max(0.0, b);

  // Idle as the engine counts it: no compute op running.
  const Summary sum = summarize(plan, tl);
  s.pipeline_end = sum.pipeline_end;
  s.rank_idle = sum.rank_idle;
  s.stage_idle = sum.stage_idle;
  for (double v : s.stage_idle) s.bubble += v / s.pp;

  // Waiting: no microbatch's work under way.
  s.stage_waiting.assign(static_cast<std::size_t>(s.pp), 0.0);
  for (int r = 0; r < world; ++r) {
    auto& mine = by_rank[static_cast<std::size_t>(r)];
    std::sort(mine.begin(), mine.end(), [](const PipeSpan& a, const PipeSpan& b) { return a.begin < b.begin; });
    double busy = 0;
    for (const PipeSpan& sp : mine) busy += sp.end - sp.begin;
    const double idle = s.pipeline_end > 0 ? 1.0 - busy / s.pipeline_end : 0.0;
    s.stage_waiting[static_cast<std::size_t>(r / s.dp)] += idle / s.dp;
    s.spans.insert(s.spans.end(), mine.begin(), mine.end());
  }
  for (double v : s.stage_waiting) s.waiting += v / s.pp;
  s.textbook = textbook_bubble(plan.config);
  return s;
}

// ----------------------------------------------------------------------------------------------
// the fastest of N measured runs

FastestRuns fastest_of(ParallelTrainer& t, int runs) {
  if (runs < 1) throw Error("fastest_of: at least one measured run, not " + std::to_string(runs));
  t.step();  // warm-up
  FastestRuns f;
  f.runs = runs;
  std::vector<double> fastest;
  for (int k = 0; k < runs; ++k) {
    f.losses.push_back(t.step().loss);
    const Plan& plan = t.plan();
    const Timeline& tl = t.timeline();
    if (fastest.empty()) fastest.assign(plan.ops.size(), 1e30);
    if (fastest.size() != plan.ops.size() || tl.ops.size() != plan.ops.size())
      throw Error("fastest_of: the plan changed between measured steps");
    for (const Op& op : plan.ops)
      if (op.is_compute()) fastest[op.id] = std::min(fastest[op.id], tl.ops[op.id].measured_s);
  }
  for (double& s : fastest)
    if (s > 1e29) s = 0;  // not a compute op: the clock times it from the cost model
  f.timeline = replay_on_clock(t.plan(), t.options().cost, fastest);
  return f;
}

}  // namespace onegpu::app
