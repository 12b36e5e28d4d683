#pragma once
// A press that lands where the pointer has just moved waits one frame.
//
// Dear ImGui 1.86 (Debian's) takes a click on a tab, or on any item that may overlap another,
// only where the pointer was already over it in the frame before. A touch screen, a pen, or a
// quick move-and-click puts the move and the press into one frame, and the click was lost (the
// Lab's tabs ignored such a click). This shows ImGui the pointer at its new place for one frame
// with the button still up, then the press; the release follows from the button's own state.
// Pure logic, fed the backend's values once a frame: tests/app/ui/press_after_move_test.cpp.
namespace onegpu::app {

class PressAfterMove {
 public:
  static constexpr int kButtons = 3;
  // The pointer's position and each button's state as the backend read them this frame; the
  // states are changed in place to what ImGui should see.
  void filter(float x, float y, bool down[kButtons]) {
    const bool moved = !seen_ || x != x_ || y != y_;
    for (int b = 0; b < kButtons; ++b) {
      if (held_[b]) {  // last frame's press, shown now (if the button is up again, ImGui sees that next frame)
        down[b] = true;
        held_[b] = false;
      } else if (down[b] && !shown_[b] && moved) {
        down[b] = false;
        held_[b] = true;
      }
      shown_[b] = down[b];
    }
    x_ = x, y_ = y, seen_ = true;
  }
  bool holding() const { return held_[0] || held_[1] || held_[2]; }  // a frame is owed

 private:
  bool held_[kButtons] = {}, shown_[kButtons] = {};
  float x_ = 0, y_ = 0;
  bool seen_ = false;
};

}  // namespace onegpu::app
