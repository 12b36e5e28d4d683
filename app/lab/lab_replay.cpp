#include "app/lab/lab_replay.h"

#include <algorithm>

namespace onegpu::app {

namespace {
constexpr double kEps = 1e-12;  // a moment that touches an op's edge is inside it
}

void ReplayCursor::advance(double dt, double end) {
  if (!playing || end <= 0) return;
  if (t < 0) t = 0;
  speed = std::clamp(speed, kMinSpeed, kMaxSpeed);
  t += dt * speed * end / kStepSeconds;
  if (t >= end) t = end, playing = false;
}

double span_time(const OpSpan& o, const RunStep& s, bool wall, bool end) {
  if (wall) return (double)((end ? o.wend : o.wbegin) - s.wall_begin) * 1e-9;
  return end ? o.vend : o.vbegin;
}

const OpSpan* op_at(const RunStep& s, const std::vector<std::uint32_t>& spans, double t, bool wall) {
  const OpSpan* now = nullptr;
  for (std::uint32_t i : spans) {
    if (i >= s.ops.size()) continue;
    const OpSpan& o = s.ops[i];
    if (span_time(o, s, wall, false) <= t + kEps && t <= span_time(o, s, wall, true) + kEps) now = &o;
  }
  return now;  // the latest-listed when two touch (one ends as the next begins)
}

double op_jump(const RunStep& s, const std::vector<std::uint32_t>& spans, double t, bool wall, int dir) {
  double best = t;
  bool found = false;
  for (std::uint32_t i : spans) {
    if (i >= s.ops.size()) continue;
    const double b = span_time(s.ops[i], s, wall, false);
    if (dir > 0 && b > t + 1e-9 && (!found || b < best)) best = b, found = true;
    if (dir < 0 && b < t - 1e-9 && (!found || b > best)) best = b, found = true;
  }
  return best;
}

}  // namespace onegpu::app
