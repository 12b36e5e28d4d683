#include "app/run/recorded_run.h"

#include <vector>

#include "app/live/step_records.h"
#include "trainer/error.h"
#include "trainer/events/event_stream.h"

namespace onegpu::app {

using namespace trainer;

std::shared_ptr<const LiveRun> recorded_live_run(const ModelConfig& mc, const ParallelOptions& o) {
  auto info = std::make_shared<LiveRun>();
  info->model = mc;
  info->workers = o.workers > 0 ? o.workers : 1;
  info->seq = o.seq_len > 0 ? o.seq_len : mc.seq_len;
  info->tokens_per_step = (std::int64_t)o.batch * info->seq;
  info->by_layer = o.op_per_layer;
  const RunConfig rc = parallel_run_config(mc, o);
  info->steady_plan = std::make_shared<const Plan>(compile_plan(rc));
  if (o.broadcast_first_step)
    info->first_plan = std::make_shared<const Plan>(compile_plan(rc, PlanOptions{.broadcast_model = true}));
  return info;
}

RecordedRun record_run(const ModelConfig& mc, ParallelOptions o, const TokenDataset& data, const Batch& batch, int steps,
                       const std::function<void(int, const ParallelTrainer&)>& look) {
  if (o.workers <= 0) o.workers = 1;
  // Room for a whole step in every lane: nothing is drained until the step is over.
  auto events = std::make_shared<EventStream>((std::size_t)o.workers + 1, std::size_t{1} << 16);
  o.events = events.get();
  RecordedRun r;
  r.run = recorded_live_run(mc, o);
  r.state.attach(r.run);
  ParallelTrainer t(mc, o, data);
  for (const Event& e : resident_records(t)) r.state.consume(e);  // what each rank holds at the start
  if (look) look(-1, t);
  for (int step = 0; step < steps; ++step) {
    std::vector<float> before;
    if (o.op_per_layer) before.assign(t.params(0).master.data(), t.params(0).master.data() + t.params(0).master.size());
    const ParallelStepResult res = t.step(batch);
    std::vector<Event> evs;
    events->drain([&](const Event& e) { evs.push_back(e); });
    for (const Event& e : step_records(res, step, mc.n_experts)) evs.push_back(e);
    if (o.op_per_layer)
      for (const Event& e : update_size_records(t.params(0), before, mc.n_layers, step)) evs.push_back(e);
    Event end;
    end.kind = EventKind::StepEnd;
    end.step = step;
    end.value = res.loss;
    end.bytes = r.run->tokens_per_step;
    end.virtual_end = res.virtual_seconds;
    evs.push_back(end);
    for (const Event& e : evs) r.state.consume(e);
    if (look) look(step, t);
  }
  if (r.state.dropped() != 0) throw Error("recorded run: events were dropped while recording");
  return r;
}

}  // namespace onegpu::app
