#pragma once
// Where the viewer is in the story and what the keys do: pure state, no window, so every
// key's effect is unit-tested.
#include <algorithm>
#include <string>

namespace onegpu::app {

enum class Action {
  Next, Previous, First, Last, Replay, ToggleSidebar, ScaleUp, ScaleDown, ScaleReset,
  ToggleFullscreen, Escape, Quit, WheelForward, WheelBack, ToggleLab,
  // Presenter comforts: a black screen, the picture without panels, chapters that open
  // finished instead of animating, the key list, and the chapter's button from the keyboard.
  Blank, ToggleClean, ToggleReducedMotion, ToggleHelp, PressButton,
  SavePng  // the window saves a PNG of its next frame (the navigator keeps no state for it)
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
  // The text and panel scale in use: the one chosen (Ctrl+= / Ctrl+-), or the largest the
  // screen on show takes in this window (set_scale_limit), whichever is smaller.
  float ui_scale() const { return std::min(scale_, limit_); }
  // The App sets this every frame from the window's size: the Lab's tiled panels break words
  // apart past it, where the story's panels shrink their text to fit. Ctrl+= at the limit says
  // why nothing grew; the scale chosen comes back in a larger window (or in the story).
  void set_scale_limit(float limit) { limit_ = std::clamp(limit, kMinScale, kMaxScale); }
  static constexpr float kMaxScale = 4.0f, kMinScale = 0.5f;
  bool sidebar_open() const { return sidebar_; }
  bool fullscreen() const { return fullscreen_; }
  // The Lab (the live run) is open instead of a chapter.
  bool lab_open() const { return lab_; }
  void set_lab(bool open) { lab_ = open; }
  bool quit() const { return quit_; }
  bool blank() const { return blank_; }
  bool clean() const { return clean_; }
  bool reduced_motion() const { return reduced_motion_; }
  void set_reduced_motion(bool on) { reduced_motion_ = on; }
  bool help_open() const { return help_; }
  // The chapter's button was pressed during this visit (or the chapter was entered from the
  // one after it, already finished). A chapter that waits for its button holds its clock
  // until then; leaving, R and jumps make it wait again.
  bool button_done() const { return button_done_; }
  void mark_button_done() { button_done_ = true; }
  // PressButton asked for the chapter's button; the app takes the request once (true once).
  bool take_button_request() { bool r = button_request_; button_request_ = false; return r; }
  // A short message for the viewer ("Press Esc again to quit"), empty when none.
  std::string toast(double now) const;
  // Seconds since the chapter changed, for cross-fades.
  double changed_at() const { return changed_at_; }

 private:
  void move_to(int index, bool backward, double now);
  int count_, index_;
  float t_ = 0.0f;
  bool backward_ = false;
  float base_scale_, scale_, limit_ = kMaxScale;
  bool sidebar_ = true, fullscreen_ = false, quit_ = false, lab_ = false;
  bool blank_ = false, clean_ = false, reduced_motion_ = false, help_ = false;
  bool button_done_ = false, button_request_ = false;
  double esc_at_ = -1e9, wheel_at_ = -1e9, changed_at_ = 0.0;
  std::string note_;         // a toggle's one-line confirmation ("Reduced motion: on")
  double note_at_ = -1e9;
};

}  // namespace onegpu::app
