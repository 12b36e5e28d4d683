#include "trainer/plan/schedule.h"

#include <algorithm>
#include <deque>


namespace onegpu::trainer {

std::vector<ScheduleItem> gpipe_order(int pp, int m, int stage) {
  (void)pp;
  (void)stage;
  std::vector<ScheduleItem> out;
  for (int i = 0; i < m; ++i) out.push_back({Pass::F, 0, i});
  for (int i = 0; i < m; ++i) out.push_back({Pass::B, 0, i});
  return out;
}

std::vector<ScheduleItem> one_f_one_b_order(int pp, int m, int stage) {
  // Warm up with enough forwards to fill the pipeline below the last stage, then alternate.
  const int warmup = std::min(pp - stage - 1, m);
  std::vector<ScheduleItem> out;
  for (int i = 0; i < warmup; ++i) out.push_back({Pass::F, 0, i});
  for (int i = 0; i < m - warmup; ++i) {
    out.push_back({Pass::F, 0, warmup + i});
    out.push_back({Pass::B, 0, i});
  }
  for (int i = m - warmup; i < m; ++i) out.push_back({Pass::B, 0, i});
  return out;
}

std::vector<ScheduleItem> interleaved_order(int pp, int v, int m, int stage) {
  // Megatron-LM's interleaved order: microbatches go through in groups of pp, each group
  // visiting chunk 0, 1, ..., v-1 on the way up (and v-1 ... 0 on the way down).
  const int total = m * v;
  auto chunk_of = [&](int k, bool forward) {
    const int c = (k % (pp * v)) / pp;
    return forward ? c : v - 1 - c;
  };
  auto mb_of = [&](int k) { return (k / (pp * v)) * pp + k % pp; };
  const int warmup = std::min((pp - stage - 1) * 2 + (v - 1) * pp, total);
  std::vector<ScheduleItem> out;
  for (int k = 0; k < warmup; ++k) out.push_back({Pass::F, chunk_of(k, true), mb_of(k)});
  for (int j = 0; j < total - warmup; ++j) {
    const int k = warmup + j;
    out.push_back({Pass::F, chunk_of(k, true), mb_of(k)});
    out.push_back({Pass::B, chunk_of(j, false), mb_of(j)});
  }
  for (int j = total - warmup; j < total; ++j)
    out.push_back({Pass::B, chunk_of(j, false), mb_of(j)});
  return out;
}

std::vector<std::vector<ScheduleItem>> zb_h1_orders(int pp, int m) {
  // ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", 2023): 1F1B's order, with every
  // backward split into B (input gradient, on the critical path) and W (weight gradient, which
  // nothing waits for). Stage s keeps up to s W passes back: after its last B the gradient
  // still needs s hops to reach stage 0, and the deferred W passes fill exactly that wait.
  // Every stage then holds at most pp microbatches of activations, 1F1B's peak.
  std::vector<std::vector<ScheduleItem>> out(static_cast<std::size_t>(pp));
  for (int s = 0; s < pp; ++s) {
    std::deque<int> deferred;
    auto& order = out[static_cast<std::size_t>(s)];
    for (const ScheduleItem& it : one_f_one_b_order(pp, m, s)) {
      order.push_back(it);
      if (it.pass != Pass::B) continue;
      deferred.push_back(it.microbatch);
      if (static_cast<int>(deferred.size()) > s) {
        order.push_back({Pass::W, 0, deferred.front()});
        deferred.pop_front();
      }
    }
    for (int w : deferred) order.push_back({Pass::W, 0, w});
  }
  return out;
}

std::vector<ScheduleItem> stage_order(const RunConfig& cfg, int stage) {
  switch (cfg.schedule) {
    case Schedule::GPipe: return gpipe_order(cfg.pp, cfg.microbatches, stage);
    case Schedule::OneFOneB: return one_f_one_b_order(cfg.pp, cfg.microbatches, stage);
    case Schedule::Interleaved:
      return interleaved_order(cfg.pp, cfg.vstages, cfg.microbatches, stage);
    case Schedule::ZeroBubbleH1: return zb_h1_orders(cfg.pp, cfg.microbatches)[stage];
  }
  return {};
}

}  // namespace onegpu::trainer
