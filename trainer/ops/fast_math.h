#pragma once
// exp written so loops over it vectorise (libm's expf is a call per element). Branch-free:
// range reduction to r in [-ln2/2, ln2/2], a degree-7 polynomial, then 2^k through the
// exponent bits. Relative error about 2e-7 (1-2 ulp); the same input gives the same output on
// every call, so results stay deterministic.
#include <cstdint>
#include <cstring>

namespace onegpu::trainer {

inline float fast_exp(float x) {
  x = x < -87.f ? -87.f : (x > 88.f ? 88.f : x);
  const float t = x * 1.44269504088896341f;
  const int k = (int)(t + (t >= 0.f ? 0.5f : -0.5f));
  const float kf = (float)k;
  const float r = (x - kf * 0.693145751953125f) - kf * 1.428606765330187045e-06f;
  float p = 1.f / 5040.f;
  p = p * r + 1.f / 720.f;
  p = p * r + 1.f / 120.f;
  p = p * r + 1.f / 24.f;
  p = p * r + 1.f / 6.f;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  const std::uint32_t bits = (std::uint32_t)(k + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return p * scale;
}

}  // namespace onegpu::trainer
