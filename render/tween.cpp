#include "render/tween.h"

namespace onegpu::render {

float ease(Ease e, float x) {
  x = std::clamp(x, 0.0f, 1.0f);
  switch (e) {
    case Ease::Linear: return x;
    case Ease::Smooth: return x * x * (3.0f - 2.0f * x);
    case Ease::InCubic: return x * x * x;
    case Ease::OutCubic: { float u = 1.0f - x; return 1.0f - u * u * u; }
    case Ease::InOutCubic:
      return x < 0.5f ? 4.0f * x * x * x : 1.0f - std::pow(-2.0f * x + 2.0f, 3.0f) / 2.0f;
    case Ease::OutBack: {
      // Overshoots a little past 1 before settling: used for things that "land".
      const float c1 = 1.70158f, c3 = c1 + 1.0f;
      float u = x - 1.0f;
      return 1.0f + c3 * u * u * u + c1 * u * u;
    }
    case Ease::OutExpo: return x >= 1.0f ? 1.0f : 1.0f - std::pow(2.0f, -10.0f * x);
    case Ease::InOutSine: return -(std::cos(3.14159265f * x) - 1.0f) / 2.0f;
  }
  return x;
}

}  // namespace onegpu::render
