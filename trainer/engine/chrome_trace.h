#pragma once
// A run as a Chrome / Perfetto trace (JSON, "traceEvents"): open it at ui.perfetto.dev.
//   - one process per rank ("rank 5 · stage 1 · dp 1"), with three threads, because spans
//     on one thread must nest: compute (forward, backward, W, update), comm (receives and
//     collectives, which hold the rank) and send (eager sends, in flight beside compute);
//   - a complete ("X") event per op in virtual time (microseconds; unit costs show as
//     seconds), with its op id, layers, microbatch, bytes and wall time in args;
//   - a flow arrow ("s" -> "f") from every send to its receive;
//   - counters ("C"): live activations per rank (microbatch-chunks held, from the program),
//     and any MemoryLevel / Loss events passed in (virtual_begin is their time).
#include <span>
#include <string>

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

}  // namespace onegpu::trainer
