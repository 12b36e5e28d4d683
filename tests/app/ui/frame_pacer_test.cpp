// FramePacer (app/ui/frame_pacer.h): frames due one interval after the last was due, so a
// late wake-up is not added to every frame; a frame running late is followed at once, and one
// more than a frame behind starts the schedule again.
#include <gtest/gtest.h>

#include "app/ui/frame_pacer.h"

namespace onegpu::app {
namespace {

using Clock = FramePacer::Clock;
using ms = std::chrono::duration<double, std::milli>;

double after(Clock::time_point t0, Clock::time_point t) { return ms(t - t0).count(); }

TEST(FramePacer, ThirtyFramesASecondComeOutAsThirty) {
  FramePacer p;
  const Clock::time_point t0{};
  const double step = 1.0 / 30.0;
  Clock::time_point now = t0 + std::chrono::seconds(1);
  const Clock::time_point start = now;
  Clock::time_point due = p.next(step, now);
  for (int frame = 1; frame < 30; ++frame) {
    now = due + std::chrono::microseconds(300);  // each wake-up 0.3 ms late, then 5 ms of drawing
    now += std::chrono::milliseconds(5);
    due = p.next(step, now);
  }
  EXPECT_NEAR(after(start, due), 1000.0, 0.01) << "30 frames due in one second, lateness not summed";
}

TEST(FramePacer, ALateFrameIsFollowedAtOnceAndAStallRestartsTheSchedule) {
  FramePacer p;
  const double step = 0.1;
  Clock::time_point now{std::chrono::seconds(10)};
  Clock::time_point due = p.next(step, now);
  EXPECT_NEAR(after(now, due), 100.0, 0.01);
  now = due + std::chrono::milliseconds(150);  // that frame took 150 ms: the next is already due
  due = p.next(step, now);
  EXPECT_LT(after(now, due), 0.0) << "no sleep after a late frame";
  now += std::chrono::seconds(5);  // a still spell (nothing drawn)
  due = p.next(step, now);
  EXPECT_NEAR(after(now, due), 0.0, 0.01) << "no burst of frames to catch up";
  due = p.next(step, now);
  EXPECT_NEAR(after(now, due), 100.0, 0.01);
}

}  // namespace
}  // namespace onegpu::app
