#pragma once
// Frames at a steady rate. Each frame is due one interval after the last one was due, not one
// interval after it started: sleeping a whole interval from each frame's start added the
// wake-up's lateness to every frame, and 30 frames a second came out as 29.6. A frame that runs
// late is followed at once; more than a frame behind, the schedule starts again from now
// rather than racing to catch up.
#include <chrono>
#include <thread>

namespace onegpu::app {

class FramePacer {
 public:
  using Clock = std::chrono::steady_clock;
  // The moment the next frame is due, `interval` seconds after the last one (now, the first time).
  Clock::time_point next(double interval, Clock::time_point now = Clock::now()) {
    const auto step = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval));
    due_ = started_ ? due_ + step : now + step;
    started_ = true;
    if (due_ + step < now) due_ = now;
    return due_;
  }
  void wait(double interval) { std::this_thread::sleep_until(next(interval)); }

 private:
  Clock::time_point due_{};
  bool started_ = false;
};

}  // namespace onegpu::app
