#include "app/navigator.h"

#include <algorithm>

namespace onegpu::app {

namespace {
constexpr double kEscWindow = 1.5;     // second Esc within this many seconds quits
constexpr double kWheelCooldown = 0.35; // one chapter per wheel flick, not per notch
constexpr float kScaleStep = 1.15f;
}  // namespace

Navigator::Navigator(int chapter_count, int start, float base_scale)
    : count_(std::max(1, chapter_count)),
      index_(std::clamp(start, 0, std::max(1, chapter_count) - 1)),
      base_scale_(base_scale),
      scale_(base_scale) {}

void Navigator::move_to(int index, bool backward, double now) {
  index = std::clamp(index, 0, count_ - 1);
  if (index == index_) return;
  index_ = index;
  t_ = 0.0f;
  backward_ = backward;
  button_done_ = backward;  // coming back shows the chapter finished, its button used
  button_request_ = false;
  changed_at_ = now;
}

void Navigator::go_to(int index) {
  index_ = std::clamp(index, 0, count_ - 1);
  t_ = 0.0f;
  backward_ = false;
  button_done_ = button_request_ = false;
  lab_ = false;
}

void Navigator::apply(Action a, double now) {
  if (blank_ && a != Action::Quit) {  // a blanked screen comes back on any key, nothing else
    blank_ = false;
    return;
  }
  if (help_ && a == Action::Escape) {  // Esc only closes the key list (it must not arm quitting)
    help_ = false;
    return;
  }
  if (help_ && a != Action::ToggleHelp && a != Action::Quit) help_ = false;  // any other key closes it, and acts
  switch (a) {
    case Action::Next: move_to(index_ + 1, false, now); break;
    case Action::Previous: move_to(index_ - 1, true, now); break;
    case Action::First: move_to(0, false, now); break;
    case Action::Last: move_to(count_ - 1, false, now); break;
    case Action::Replay: t_ = 0.0f; backward_ = false; button_done_ = false; break;
    case Action::Blank: blank_ = true; break;
    case Action::ToggleClean:
      clean_ = !clean_;
      note_ = clean_ ? "Panels hidden · H brings them back" : "";
      note_at_ = now;
      break;
    case Action::ToggleReducedMotion:
      reduced_motion_ = !reduced_motion_;
      note_ = reduced_motion_ ? "Reduced motion: chapters open finished (M to undo)" : "Reduced motion off: chapters animate";
      note_at_ = now;
      break;
    case Action::ToggleHelp: help_ = !help_; break;
    case Action::PressButton: button_request_ = true; break;
    case Action::ToggleSidebar: sidebar_ = !sidebar_; break;
    case Action::ScaleUp:
      if (scale_ >= limit_ && limit_ < kMaxScale) {
        note_ = "Text is at its largest for this window";
        note_at_ = now;
      } else {
        scale_ = std::min(scale_ * kScaleStep, kMaxScale);
      }
      break;
    case Action::ScaleDown: scale_ = std::max(std::min(scale_, limit_) / kScaleStep, kMinScale); break;
    case Action::ScaleReset: scale_ = base_scale_; break;
    case Action::ToggleFullscreen: fullscreen_ = !fullscreen_; break;
    case Action::Escape:
      if (now - esc_at_ <= kEscWindow) quit_ = true;
      esc_at_ = now;
      break;
    case Action::Quit: quit_ = true; break;
    case Action::ToggleLab: lab_ = !lab_; break;
    case Action::SavePng: break;
    case Action::WheelForward:
    case Action::WheelBack:
      if (now - wheel_at_ < kWheelCooldown) break;
      wheel_at_ = now;
      apply(a == Action::WheelForward ? Action::Next : Action::Previous, now);
      break;
  }
}

void Navigator::advance(float dt) { t_ += std::max(0.0f, dt); }

std::string Navigator::toast(double now) const {
  if (!quit_ && now - esc_at_ <= kEscWindow) return "Press Esc again to quit";
  if (!note_.empty() && now - note_at_ <= kEscWindow) return note_;
  return {};
}

}  // namespace onegpu::app
