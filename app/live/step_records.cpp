#include "app/live/step_records.h"

#include <cmath>
#include <cstring>

#include "trainer/model/params.h"

namespace onegpu::app {

using trainer::Event;
using trainer::EventKind;

std::vector<Event> step_records(const trainer::ParallelStepResult& r, int step, int experts) {
  std::vector<Event> out;
  Event base;
  base.step = step;
  base.microbatch = -1;
  Event g = base;
  g.kind = EventKind::GradNorm;
  g.value = r.grad_norm;
  out.push_back(g);
  for (int rank = 0; rank < (int)r.memory.size(); ++rank)
    for (int c = 0; c < trainer::kMemCategoryCount; ++c) {
      Event m = base;
      m.kind = EventKind::StepMemory;
      m.rank = rank;
      m.detail = (std::uint8_t)c;
      m.bytes = r.memory[(std::size_t)rank].current[(std::size_t)c];
      m.value = (double)r.memory[(std::size_t)rank].peak[(std::size_t)c];
      out.push_back(m);
    }
  for (std::size_t i = 0; i < r.router_counts.size(); ++i) {
    if (r.router_counts[i] == 0) continue;
    Event rc = base;
    rc.kind = EventKind::RouterCount;
    rc.layer = (std::int16_t)(i / (std::size_t)experts);
    rc.peer = (std::int16_t)(i % (std::size_t)experts);
    rc.bytes = r.router_counts[i];
    out.push_back(rc);
  }
  for (const auto& t : r.traffic) {
    Event tr = base;
    tr.kind = EventKind::Traffic;
    tr.rank = t.from;
    tr.peer = (std::int16_t)t.to;
    tr.layer = (std::int16_t)t.layer;
    tr.bytes = t.rows;
    out.push_back(tr);
  }
  Event lr = base;
  lr.kind = EventKind::Probe;
  lr.detail = (std::uint8_t)trainer::ProbeKind::LearningRate;
  lr.value = r.lr;
  out.push_back(lr);
  return out;
}

std::uint64_t fingerprint(const std::vector<float>& w) {
  std::uint64_t h = 1469598103934665603ull;
  for (float x : w) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    for (int b = 0; b < 4; ++b) h = (h ^ ((u >> (8 * b)) & 0xff)) * 1099511628211ull;
  }
  return h;
}


std::vector<Event> resident_records(const trainer::ParallelTrainer& t) {
  std::vector<Event> out;
  for (int r = 0; r < t.world(); ++r) {
    const trainer::MemStats m = t.tracker(r).stats();
    for (int c = 0; c < trainer::kMemCategoryCount; ++c) {
      Event e;
      e.kind = EventKind::StepMemory;
      e.step = -1;
      e.rank = r;
      e.detail = (std::uint8_t)c;
      e.bytes = m.current[(std::size_t)c];
      e.value = (double)m.peak[(std::size_t)c];
      out.push_back(e);
    }
  }
  return out;
}

std::vector<Event> update_size_records(const trainer::ParamStore& P, const std::vector<float>& before, int n_layers,
                                       int step) {
  std::vector<Event> out;
  auto moved = [&](std::int64_t a, std::int64_t n, int layer) {
    double d = 0, w = 0;
    for (std::int64_t i = a; i < a + n && i < (std::int64_t)P.master.size() && i < (std::int64_t)before.size(); ++i) {
      const double x = before[(std::size_t)i], y = P.master.data()[i];
      d += (y - x) * (y - x);
      w += x * x;
    }
    Event u;
    u.step = step;
    u.microbatch = -1;
    u.kind = EventKind::Probe;
    u.detail = (std::uint8_t)trainer::ProbeKind::UpdateSize;
    u.layer = (std::int16_t)layer;
    u.value = w > 0 ? std::sqrt(d / w) : 0.0;
    out.push_back(u);
  };
  for (int l = 0; l < n_layers; ++l) moved(P.layer_offset(l), P.layer_layout().size, l);
  moved(0, (std::int64_t)P.master.size(), -1);
  return out;
}

}  // namespace onegpu::app
