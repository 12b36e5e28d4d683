#include "app/run/step_reader.h"

#include <algorithm>
#include <string>

#include "trainer/engine/engine.h"
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

PipelineStep read_step(const RunState& state, const RunStep& rec) {
  const LiveRun* run = state.run();
  if (!run) throw Error("read_step: the run state has no run attached");
  const Plan& plan = run->plan_of(rec.step);
  if (!rec.complete) throw Error("read_step: step " + std::to_string(rec.step) + " is not finished");
  // Spans by op id: events arrive in any order, the reader goes in plan order.
  std::vector<const OpSpan*> by_id(plan.ops.size(), nullptr);
  for (const OpSpan& o : rec.ops)
    if (o.id < by_id.size()) by_id[o.id] = &o;
  for (std::size_t id = 0; id < by_id.size(); ++id)
    if (!by_id[id] || !rec.spans_whole)
      throw Error("read_step: step " + std::to_string(rec.step) + " misses the span of op " + std::to_string(id) +
                  " (" + std::to_string(rec.ops.size()) + " of " + std::to_string(plan.ops.size()) + " spans)");

  PipelineStep s;
  s.pp = plan.config.pp;
  s.dp = plan.config.dp;
  s.ep = plan.config.ep;
  s.microbatches = plan.config.microbatches;
  const int world = plan.world();
  s.meet_begin.assign(static_cast<std::size_t>(s.pp), -1.0);
  s.meet_end.assign(static_cast<std::size_t>(s.pp), 0.0);
  std::vector<std::vector<PipeSpan>> by_rank(static_cast<std::size_t>(world));
  for (const OpSpan* sp : by_id) {
    const OpSpan& o = *sp;
    s.step_end = std::max(s.step_end, o.vend);
    const bool fwd = o.kind == EventKind::Forward;
    const bool bwd = o.kind == EventKind::Backward || o.kind == EventKind::WeightGradient;
    if (fwd || bwd) {
      s.pipeline_end = std::max(s.pipeline_end, o.vend);
      s.ops.push_back({o.rank, bwd, o.microbatch, o.layer, plan.ops[o.id].layer_end, o.vbegin, o.vend});
      // Spans: a rank's ops of one microbatch and direction, joined.
      auto& mine = by_rank[static_cast<std::size_t>(o.rank)];
      auto it = std::find_if(mine.begin(), mine.end(), [&](const PipeSpan& p) {
        return p.backward == bwd && p.microbatch == o.microbatch;
      });
      if (it == mine.end()) mine.push_back({o.rank, bwd, o.microbatch, o.vbegin, o.vend});
      else it->begin = std::min(it->begin, o.vbegin), it->end = std::max(it->end, o.vend);
    } else if (o.kind == EventKind::Send && plan.ops[o.id].payload != Payload::None) {
      s.handoffs.push_back({o.rank, o.peer, plan.ops[o.id].payload == Payload::Gradient, o.microbatch, o.vbegin, o.vend});
    } else if (o.kind == EventKind::AllReduce) {
      const auto stage = static_cast<std::size_t>(plan.layout.coord(o.rank).stage);
      double& mb = s.meet_begin[stage];
      mb = mb < 0 ? o.vbegin : std::min(mb, o.vbegin);
      s.meet_end[stage] = std::max(s.meet_end[stage], o.vend);
    }
  }
  for (double& b : s.meet_begin) b = std::max(0.0, b);

  // Idle as the engine counts it (no compute op running): the record's, from summarize().
  s.rank_idle = rec.rank_idle;
  if (static_cast<int>(s.rank_idle.size()) != world)
    throw Error("read_step: step " + std::to_string(rec.step) + " has no idle shares");
  s.stage_idle.assign(static_cast<std::size_t>(s.pp), 0.0);
  for (int r = 0; r < world; ++r)
    s.stage_idle[static_cast<std::size_t>(plan.layout.coord(r).stage)] += s.rank_idle[static_cast<std::size_t>(r)] / s.dp;
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
  s.textbook = rec.textbook;
  s.loss = rec.loss;
  if (run->seq > 0) {
    s.seq = run->seq;
    s.texts = static_cast<int>(run->tokens_per_step / run->seq);
  }
  return s;
}

// ----------------------------------------------------------------------------------------------
// recorded runs

std::shared_ptr<const LiveRun> recorded_run(const Plan& plan, const ModelConfig& model, int texts, int seq) {
  auto run = std::make_shared<LiveRun>();
  run->model = model;
  run->steady_plan = std::make_shared<const Plan>(plan);
  run->workers = 1;
  run->seq = seq;
  run->tokens_per_step = static_cast<std::int64_t>(texts) * seq;
  return run;
}

std::shared_ptr<const LiveRun> recorded_run(const ParallelTrainer& t) {
  const int seq = t.options().seq_len > 0 ? t.options().seq_len : t.model_config().seq_len;
  return recorded_run(t.plan(), t.model_config(), t.options().batch, seq);
}

RecordedStep record_step(std::shared_ptr<const LiveRun> run, const Timeline& tl, double loss, int measured_runs) {
  RecordedStep r;
  const Plan& plan = *run->steady_plan;
  r.state.attach(std::move(run));
  for (const Event& e : timeline_events(plan, tl, 0)) r.state.consume(e);
  Event end;
  end.kind = EventKind::StepEnd;
  end.rank = -1;
  end.step = 0;
  end.value = loss;
  end.bytes = r.state.run()->tokens_per_step;
  end.virtual_end = tl.end;
  r.state.consume(end);
  const RunStep* rec = r.state.last_complete();
  if (!rec) throw Error("record_step: the step did not finish");
  r.step = read_step(r.state, *rec);
  r.step.measured_runs = measured_runs;
  return r;
}

PipelineStep read_step(const Plan& plan, const Timeline& tl) {
  return record_step(recorded_run(plan), tl).step;
}

// ----------------------------------------------------------------------------------------------
// the fastest of N measured runs

FastestRuns fastest_of(ParallelTrainer& t, int runs, const Batch* batch) {
  if (runs < 1) throw Error("fastest_of: at least one measured run, not " + std::to_string(runs));
  auto step = [&] { return batch ? t.step(*batch) : t.step(); };
  step();  // warm-up
  FastestRuns f;
  f.runs = runs;
  std::vector<double> fastest;
  for (int k = 0; k < runs; ++k) {
    f.losses.push_back(step().loss);
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
