#pragma once
// A wheel turn where the pointer has just moved is judged a frame later.
//
// The window decides whether a wheel turn over the picture turns the chapter or belongs to a
// panel from ImGui's WantCaptureMouse, which says where the pointer was in the last frame drawn.
// Moved from the chapter list onto the picture and turned at once, the wheel was taken for the
// list's (nothing happened; the next turn worked). A turn away from where the last frame saw
// the pointer waits one frame, drawn with the pointer there; a turn that has waited is judged
// then, wherever the pointer is. Pure logic: tests/app/ui/wheel_after_move_test.cpp.
#include <cmath>
#include <utility>
#include <vector>

#include "app/ui/input_queue.h"

namespace onegpu::app {

class WheelAfterMove {
 public:
  // This frame's turns; (x, y): where the last frame saw the pointer (window coordinates).
  // Returns the turns to judge now: those that waited a frame, and those where the pointer was.
  std::vector<WheelTurn> ready(const std::vector<WheelTurn>& turns, double x, double y) {
    std::vector<WheelTurn> now = std::move(held_);
    held_.clear();
    for (const WheelTurn& t : turns) {
      if (std::fabs(t.x - x) < 0.5 && std::fabs(t.y - y) < 0.5) now.push_back(t);
      else held_.push_back(t);
    }
    return now;
  }
  bool holding() const { return !held_.empty(); }  // a frame is owed

 private:
  std::vector<WheelTurn> held_;
};

}  // namespace onegpu::app
