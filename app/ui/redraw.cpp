#include "app/ui/redraw.h"

#include <algorithm>

namespace onegpu::app {

bool RedrawPolicy::should_draw(bool touched, bool animating, bool busy, double since_last_draw) {
  if (touched || busy != was_busy_) owed_ = kSettleFrames;  // work finishing changes the picture too
  was_busy_ = busy;
  const bool draw = owed_ > 0 || animating || (busy && since_last_draw >= 1.0 / kBusyFps);
  if (draw && owed_ > 0) --owed_;
  return draw;
}

double RedrawPolicy::wait_seconds(bool animating, bool busy, double since_last_draw) const {
  if (owed_ > 0 || animating) return 0.0;
  if (busy) return std::max(0.0, 1.0 / kBusyFps - since_last_draw);
  return kIdleWake;
}

bool wheel_over_scene(const PixelRect& scene, double x, double y) {
  return x >= scene.x && x < scene.x + scene.w && y >= scene.y && y < scene.y + scene.h;
}

}  // namespace onegpu::app
