#pragma once
// Replay of a recorded step: a cursor that moves through the step, and what each rank was doing
// at any moment of it. The Lab's scrubber (under the timeline) drives the cursor; the ranks
// view, the walls, the beads and the timeline's playhead all read the same moment, so a frame
// at cursor t shows exactly the run state at t.
//
//   ReplayCursor c;                 // t < 0: live (the playhead follows the step's end)
//   c.seek(0.002);                  // 2 ms into the step
//   c.play(); c.advance(dt, end);   // moves at c.speed (1x: the whole step in kStepSeconds)
//   const OpSpan* o = op_at(step, index.by_rank[r], c.t, wall);  // rank r's op at t
//
// Times are seconds from the step's start on the clock the timeline shows (virtual or wall).
#include <cstdint>
#include <vector>

#include "app/live/run_state.h"

namespace onegpu::app {

struct ReplayCursor {
  // At 1x a step plays in this many seconds of screen time, whatever its length: a 3 ms
  // virtual step or a 2 s wall-clock step are both watchable.
  static constexpr double kStepSeconds = 8.0;
  static constexpr double kMinSpeed = 0.1, kMaxSpeed = 10.0;

  double t = -1;  // < 0: live
  bool playing = false;
  double speed = 1.0;

  bool live() const { return t < 0; }
  void seek(double at) { t = at < 0 ? 0 : at; }
  void go_live() { t = -1, playing = false; }
  // Starts from the beginning when the cursor is live or already at the end.
  void play(double end) {
    if (t < 0 || t >= end) t = 0;
    playing = true;
  }
  void pause() { playing = false; }
  // Moves the cursor dt seconds of screen time on; stops at the end.
  void advance(double dt, double end);
};

// A rank's time of an op (its begin or end) on the chosen clock.
double span_time(const OpSpan& o, const RunStep& s, bool wall, bool end);

// The op rank `spans` (span indices of one rank, in time order) runs at t, or null.
const OpSpan* op_at(const RunStep& s, const std::vector<std::uint32_t>& spans, double t, bool wall);

// The begin of the rank's next op after t (dir > 0) or the previous one before t (dir < 0);
// t itself when there is none.
double op_jump(const RunStep& s, const std::vector<std::uint32_t>& spans, double t, bool wall, int dir);

}  // namespace onegpu::app
