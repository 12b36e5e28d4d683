#pragma once
// Where the viewer is in the story and what the keys do: pure state, no window, so every
// key's effect is unit-tested.
#include <string>

namespace onegpu::app {

enum class Action {
  Next, Previous, First, Last, Replay, ToggleSidebar, ScaleUp, ScaleDown, ScaleReset,
  ToggleFullscreen, Escape, Quit, WheelForward, WheelBack, ToggleLab
};

class Navigator {
 public:
  Navigator(int chapter_count, int start, float base_scale = 1.0f);

  void apply(Action a, double now);
  void go_to(int index);          // jump (sidebar click): play from the start
  void advance(float dt);         // moves the chapter's clock

  int index() const { return index_; }
  float time() const { return t_; }
  void set_time(float t) { t_ = t; }
  // True when the chapter was entered from the one after it: it should show its end state.
  bool entered_backward() const { return backward_; }
  float ui_scale() const { return scale_; }
  bool sidebar_open() const { return sidebar_; }
  bool fullscreen() const { return fullscreen_; }
  // The Lab (the live run) is open instead of a chapter.
  bool lab_open() const { return lab_; }
  void set_lab(bool open) { lab_ = open; }
  bool quit() const { return quit_; }
  // A short message for the viewer ("Press Esc again to quit"), empty when none.
  std::string toast(double now) const;
  // Seconds since the chapter changed, for cross-fades.
  double changed_at() const { return changed_at_; }

 private:
  void move_to(int index, bool backward, double now);
  int count_, index_;
  float t_ = 0.0f;
  bool backward_ = false;
  float base_scale_, scale_;
  bool sidebar_ = true, fullscreen_ = false, quit_ = false, lab_ = false;
  double esc_at_ = -1e9, wheel_at_ = -1e9, changed_at_ = 0.0;
};

}  // namespace onegpu::app
