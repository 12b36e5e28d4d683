#include "app/live/run_export.h"

#include <cmath>
#include <cstdio>

#include "trainer/io/chrome_trace.h"
#include "trainer/error.h"
#include "trainer/io/output_file.h"

namespace onegpu::app {

using trainer::Error;

int export_trace(const RunState& rs, const std::string& path) {
  const LiveRun* run = rs.run();
  if (!run) throw Error("nothing to export: no run yet");
  // Only steps whose every op has its span: a trace must match its plan.
  std::vector<const RunStep*> keep;
  for (const RunStep& s : rs.steps())
    if (s.complete && s.spans_whole) keep.push_back(&s);
  if (keep.empty()) throw Error("nothing to export: no whole step recorded yet (run one step first)");
  std::vector<trainer::Timeline> tls;
  tls.reserve(keep.size());
  for (const RunStep* s : keep) tls.push_back(rs.timeline(*s));
  std::vector<trainer::TraceStep> steps;
  for (std::size_t i = 0; i < keep.size(); ++i)
    steps.push_back({&run->plan_of(keep[i]->step), &tls[i], {}, keep[i]->step + 1});  // a trace counts from 1
  trainer::write_chrome_trace(path, steps);
  return (int)keep.size();
}

namespace {
// A number as JSON has it (NaN and infinities have no spelling there: null).
std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}
}  // namespace

std::size_t export_jsonl(const RunState& rs, const std::string& path) {
  const LiveRun* run = rs.run();
  if (!run) throw Error("nothing to export: no run yet");
  std::string out;
  std::size_t lines = 0;
  for (const StepLine& l : rs.history()) {
    out += "{\"type\":\"step\",\"step\":" + std::to_string(l.step) + ",\"loss\":" + jnum(l.loss) +
           ",\"heldout_loss\":" + jnum(l.heldout) + ",\"grad_norm\":" + jnum(l.grad_norm) + ",\"lr\":" + jnum(l.lr) +
           ",\"tokens_per_s\":" + jnum(l.tokens_per_s) + ",\"virtual_s\":" + jnum(l.virtual_s) +
           ",\"wall_s\":" + jnum(l.wall_s) + ",\"bubble\":" + jnum(l.bubble) + ",\"textbook_bubble\":" + jnum(l.textbook) +
           "}\n";
    ++lines;
  }
  for (const RunStep& s : rs.steps()) {
    for (const OpSpan& o : s.ops) {
      out += "{\"type\":\"op\",\"step\":" + std::to_string(s.step) + ",\"op\":" + std::to_string(o.id) +
             ",\"rank\":" + std::to_string(o.rank) + ",\"kind\":\"" + std::string(trainer::to_string(o.kind)) +
             "\",\"microbatch\":" + std::to_string(o.microbatch) + ",\"layer\":" + std::to_string(o.layer) +
             ",\"peer\":" + std::to_string(o.peer) + ",\"virtual_begin_s\":" + jnum(o.vbegin) +
             ",\"virtual_end_s\":" + jnum(o.vend) + ",\"wall_begin_ns\":" + std::to_string(o.wbegin) +
             ",\"wall_end_ns\":" + std::to_string(o.wend) + ",\"bytes\":" + std::to_string(o.bytes) +
             ",\"measured_s\":" + jnum(o.measured_s) + "}\n";
      ++lines;
    }
  }
  if (lines == 0) throw Error("nothing to export: no step recorded yet");
  trainer::files::write_atomic(path, out, "JSONL export");
  return lines;
}

}  // namespace onegpu::app
