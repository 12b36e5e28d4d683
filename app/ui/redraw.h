#pragma once
// When the window draws: every frame (up to 60 a second) while the picture moves, a few a
// second while background work only moves a status line (so the trainer keeps the cores),
// and not at all when nothing changes: a still chapter costs almost no CPU (bench/idle_cpu.sh
// measures it). Pure logic, so tests/app/ui/redraw_test.cpp checks each case.
#include "app/app.h"  // PixelRect

namespace onegpu::app {

class RedrawPolicy {
 public:
  static constexpr int kSettleFrames = 3;      // after input ImGui needs a frame or two for hover and layout
  static constexpr double kBusyFps = 5.0;      // status lines of background work: the trainer needs the cores more
  static constexpr double kIdleWake = 0.5;     // a still window looks for new work this often

  // Called once per wake-up, after input is handled: true when a frame should be drawn now.
  bool should_draw(bool touched, bool animating, bool busy, double since_last_draw);
  // How long to sleep waiting for input before the next wake-up (0: do not wait at all).
  double wait_seconds(bool animating, bool busy, double since_last_draw) const;

 private:
  int owed_ = kSettleFrames;  // the first frames are owed
  bool was_busy_ = false;
};

// Whether a wheel turn at (x, y), framebuffer pixels from the top left, is over the picture.
bool wheel_over_scene(const PixelRect& scene, double x, double y);

}  // namespace onegpu::app
