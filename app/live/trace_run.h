#pragma once
// A run read back from a trace that `onegpu train --trace` wrote: its plans rebuilt from the
// configuration the trace carries, and its ops as the events the engine would have sent, so
// the Lab shows it exactly as it showed a live run (`onegpu view FILE.json`). A trace has no
// losses, memory or router counts: those read-outs stay empty.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "app/live/job_runner.h"
#include "trainer/events/event.h"

namespace onegpu::app {

struct TraceRun {
  std::shared_ptr<const LiveRun> run;  // no event stream; recorded_from names the file
  std::vector<trainer::Event> events;  // every step's ops, then a StepEnd per step
  int steps = 0;
};

// Throws trainer::Error with one line: the file cannot be read, is not a trace, carries no
// run configuration (not written by onegpu), or does not match the plan of that configuration.
TraceRun load_trace_run(const std::string& path);
// The same from a trace's text; `source` names it in messages (fuzz/trace_run_fuzz.cpp).
TraceRun parse_trace_run(std::string_view text, const std::string& source = "trace");

}  // namespace onegpu::app
