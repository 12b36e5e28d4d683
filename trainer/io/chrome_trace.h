#pragma once
// A run as a Chrome / Perfetto trace (JSON, "traceEvents"): open it at ui.perfetto.dev.
//   - one process per rank ("rank 5 · stage 1 · dp 1"), with three threads, because spans
//     on one thread must nest: compute (forward, backward, W, update), comm (receives and
//     collectives, which hold the rank) and send (eager sends, in flight beside compute);
//   - a complete ("X") event per op in virtual time (microseconds; unit costs show as
//     seconds), with its op id, layers, microbatch, bytes and wall time in args;
//   - a flow arrow ("s" -> "f") from every send to its receive;
//   - counters ("C"): live activations per rank (microbatch-chunks held, from the program),
//     and any MemoryLevel / Loss events passed in (virtual_begin is their time);
//   - several steps (TraceStep): each placed after the one before on the time axis, its ops
//     carrying "step" in args, a global "step N" marker where it begins.
// read_chrome_trace() reads the ops (X events) of such a file back.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/engine/virtual_clock.h"
#include "trainer/events/event.h"
#include "trainer/plan/plan.h"

namespace onegpu::trainer {

struct TraceOptions {
  bool flows = true;
  bool activation_counters = true;
};

std::string chrome_trace_json(const Plan& plan, const Timeline& timeline,
                              std::span<const Event> extra = {}, const TraceOptions& opt = {});

// Writes chrome_trace_json() to path (through a temporary file, then renamed).
// Throws Error naming the path when it cannot be written.
void write_chrome_trace(const std::string& path, const Plan& plan, const Timeline& timeline,
                        std::span<const Event> extra = {}, const TraceOptions& opt = {});

// One step of a run. Pointers, not copies: a plan of 512 ranks is megabytes and every
// steady step shares one.
struct TraceStep {
  const Plan* plan = nullptr;
  const Timeline* timeline = nullptr;
  std::span<const Event> extra;  // its times are from the step's start, as the timeline's
  int step = -1;                 // -1: one unnumbered step (no "step" arg, no marker)
};

// Steps one after another: step k starts at the sum of the earlier timelines' ends. Ranks are
// named from the first step's plan; every step must have the same world. Throws Error when
// a timeline does not match its plan or the worlds differ.
std::string chrome_trace_json(std::span<const TraceStep> steps, const TraceOptions& opt = {});
void write_chrome_trace(const std::string& path, std::span<const TraceStep> steps,
                        const TraceOptions& opt = {});

// ---- reading a trace back ----

// One op (an "X" event) of a trace written above.
struct TraceOp {
  int rank = 0;
  std::string kind;         // the op kind's name, as to_string(OpKind): "forward", "send", ...
  std::string name;         // as Perfetto shows it: "F mb0", "recv act mb1"
  int step = -1;            // -1 in a one-step trace
  int microbatch = -1;      // -1: not per microbatch (collectives, update)
  double begin_us = 0, end_us = 0;  // virtual time, microseconds from the trace's start
  std::int64_t bytes = 0;
  std::int64_t op = -1;     // the op's id in its step's plan (args.op)
};

// A whole trace as written by onegpu: its ops and the run configuration in "otherData"
// (has_config is false for a trace from elsewhere; sizes in config stay at their defaults).
struct TraceFile {
  std::vector<TraceOp> ops;
  bool has_config = false;
  RunConfig config;
};
TraceFile parse_trace_file(std::string_view text, const std::string& source = "trace");
TraceFile read_trace_file(const std::string& path);

// The ops of the trace at path, in file order. Throws one Error naming the path when the file
// is missing, empty, not JSON, truncated, or not shaped like our traces (wrong types).
std::vector<TraceOp> read_chrome_trace(const std::string& path);
// The same from text; `source` names it in messages.
std::vector<TraceOp> parse_chrome_trace(std::string_view text, const std::string& source = "trace");

}  // namespace onegpu::trainer
