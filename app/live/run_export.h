#pragma once
// What the Lab exports from the run state, for other tools:
//   - export_trace: the steps kept whole, as the Chrome / Perfetto trace `onegpu train --trace`
//     writes (trainer/io/chrome_trace.h), so `onegpu lab --open` replays it again;
//   - export_jsonl: one JSON object a line for people who analyse in Python:
//       {"type":"step", "step":..., "loss":..., ...}   one per step line kept (history)
//       {"type":"op", "step":..., "rank":..., "kind":"forward", ...}  one per op of the steps kept whole
// Both write the whole file or nothing (trainer::files::write_atomic) and throw trainer::Error
// with one line (nothing to export, the path cannot be written).
#include <string>

#include "app/live/run_state.h"

namespace onegpu::app {

// Returns the number of steps written.
int export_trace(const RunState& rs, const std::string& path);
// Returns the number of lines written.
std::size_t export_jsonl(const RunState& rs, const std::string& path);

}  // namespace onegpu::app
