#pragma once
// Easing curves and tweens: every scene animates as a pure function of its time t, so a frame
// at a given t is always the same picture (headless renders and tests rely on that).
#include <algorithm>
#include <cmath>

namespace onegpu::render {

enum class Ease { Linear, Smooth, InCubic, OutCubic, InOutCubic, OutBack, OutExpo, InOutSine };

float ease(Ease e, float x);  // x clamped to [0,1]; returns 0 at 0 and 1 at 1

// Progress of a phase that starts at `start` and lasts `duration`, clamped to [0,1].
inline float phase(float t, float start, float duration) {
  if (duration <= 0.0f) return t >= start ? 1.0f : 0.0f;
  return std::clamp((t - start) / duration, 0.0f, 1.0f);
}
inline float phase(float t, float start, float duration, Ease e) {
  return ease(e, phase(t, start, duration));
}

template <class T>
T lerp(const T& a, const T& b, float x) { return a + (b - a) * x; }

// A value moving from `from` to `to` over [start, start + duration].
template <class T>
struct Tween {
  T from{}, to{};
  float start = 0.0f, duration = 1.0f;
  Ease curve = Ease::InOutCubic;
  T at(float t) const { return lerp(from, to, phase(t, start, duration, curve)); }
  float end() const { return start + duration; }
};

// A short rise and fall (0 → 1 → 0) centred in the phase, for pulses and flashes.
inline float pulse(float t, float start, float duration) {
  float x = phase(t, start, duration);
  return std::sin(x * 3.14159265f);
}

}  // namespace onegpu::render
