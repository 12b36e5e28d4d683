#include "app/live/trace_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "trainer/io/chrome_trace.h"
#include "trainer/engine/engine.h"
#include "trainer/error.h"
#include "trainer/plan/plan.h"

namespace onegpu::app {

using trainer::Error;

namespace {
TraceRun trace_run_from(const trainer::TraceFile& f, const std::string& path);
}  // namespace

TraceRun load_trace_run(const std::string& path) { return trace_run_from(trainer::read_trace_file(path), path); }

TraceRun parse_trace_run(std::string_view text, const std::string& source) {
  return trace_run_from(trainer::parse_trace_file(text, source), source);
}

namespace {

TraceRun trace_run_from(const trainer::TraceFile& f, const std::string& path) {
  if (!f.has_config)
    throw Error("trace " + path + " carries no run configuration (it was not written by onegpu train --trace)");
  if (f.ops.empty()) throw Error("trace " + path + " holds no ops");
  trainer::RunConfig rc = f.config;
  try {
    trainer::validate(rc);
  } catch (const Error& e) {
    throw Error("trace " + path + ": its configuration cannot be split: " + e.what());
  }
  // Ops by step: the trace counts steps from 1 (a one-step trace says -1), the run state from 0.
  std::map<int, std::vector<const trainer::TraceOp*>> by_step;
  for (const auto& o : f.ops) by_step[std::max(0, o.step - 1)].push_back(&o);
  auto info = std::make_shared<LiveRun>();
  info->generation = std::numeric_limits<std::uint64_t>::max() / 2 + 1;  // never a live run's
  info->recorded_from = path;
  info->steady_plan = std::make_shared<const trainer::Plan>(trainer::compile_plan(rc));
  info->first_plan = std::make_shared<const trainer::Plan>(trainer::compile_plan(rc, {.broadcast_model = true}));
  // Traces written before they said whether the run had an op a layer (the Lab's one-GPU runs
  // had) read as not: where the steps fit the other plan and not this one, they had.
  auto fits = [&](const trainer::Plan& steady, const trainer::Plan& first) {
    for (const auto& [step, ops] : by_step)
      if (ops.size() != steady.ops.size() && ops.size() != first.ops.size()) return false;
    return true;
  };
  if (rc.ep == 1 && !fits(*info->steady_plan, *info->first_plan)) {
    trainer::RunConfig other = rc;
    other.op_per_layer = !rc.op_per_layer;
    try {
      auto steady = std::make_shared<const trainer::Plan>(trainer::compile_plan(other));
      auto first = std::make_shared<const trainer::Plan>(trainer::compile_plan(other, {.broadcast_model = true}));
      if (fits(*steady, *first)) {
        rc = other;
        info->steady_plan = steady;
        info->first_plan = first;
      }
    } catch (const Error&) {
      // no such plan: the steps are checked against the trace's own below, and say why not
    }
  }
  info->model.name = "from " + path;
  info->model.n_layers = rc.layers;
  info->model.n_experts = rc.experts;
  info->model.top_k = rc.top_k;
  info->args.dp = rc.dp;
  info->args.ep = rc.ep;
  info->args.pp = rc.pp;
  info->args.vstages = rc.vstages;
  info->args.microbatches = rc.microbatches;
  info->args.schedule = std::string(trainer::to_string(rc.schedule));
  info->args.zero = rc.zero;
  info->by_layer = rc.op_per_layer;
  info->args.model = "(trace)";

  TraceRun out;
  info->first_plan_steps.push_back(-1);  // none yet; a marker so plan_of asks the list
  for (const auto& [step, ops] : by_step) {
    // A run's first step also broadcasts the weights: its plan is the one with more ops.
    const bool first = ops.size() == info->first_plan->ops.size();
    const trainer::Plan& plan = first ? *info->first_plan : *info->steady_plan;
    if (first) info->first_plan_steps.push_back(step);
    if (ops.size() != plan.ops.size())
      throw Error("trace " + path + ": step " + std::to_string(step) + " has " + std::to_string(ops.size()) +
                  " ops, its configuration's plan " + std::to_string(plan.ops.size()));
    double t0 = std::numeric_limits<double>::infinity();
    for (const auto* o : ops) t0 = std::min(t0, o->begin_us);
    trainer::Timeline tl;
    tl.ops.assign(plan.ops.size(), trainer::OpTime{});
    std::vector<bool> seen(plan.ops.size(), false);
    for (const auto* o : ops) {
      if (o->op < 0 || (std::size_t)o->op >= plan.ops.size() || plan.ops[(std::size_t)o->op].rank != o->rank ||
          seen[(std::size_t)o->op])
        throw Error("trace " + path + ": an op of step " + std::to_string(step) + " does not match its configuration's plan");
      seen[(std::size_t)o->op] = true;
      trainer::OpTime& t = tl.ops[(std::size_t)o->op];
      t.begin = (o->begin_us - t0) * 1e-6;
      t.end = (o->end_us - t0) * 1e-6;
      t.measured_s = t.end - t.begin;
      tl.end = std::max(tl.end, t.end);
    }
    for (const trainer::Event& e : trainer::timeline_events(plan, tl, step)) out.events.push_back(e);
    trainer::Event end;
    end.kind = trainer::EventKind::StepEnd;
    end.step = step;
    end.value = std::numeric_limits<double>::quiet_NaN();  // a trace has no loss
    end.virtual_end = tl.end;
    out.events.push_back(end);
    ++out.steps;
  }
  out.run = info;
  return out;
}

}  // namespace

}  // namespace onegpu::app
