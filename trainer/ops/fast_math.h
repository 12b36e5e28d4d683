#pragma once
// exp written for loops (libm's expf is a call per element). Range reduction to
// r in [-ln2/2, ln2/2], a degree-7 polynomial, then 2^k built in the exponent bits. Relative
// error about 2e-7 (1-2 ulp). One template serves a float and a 16-lane vector with the same
// operations in the same order, so a lane of the vector form equals the scalar form; callers
// over arrays use exp16 / for_each16 so every element takes one code path whatever the length.
#include <cstdint>
#include <cstring>

#include "trainer/ops/clones.h"

namespace onegpu::trainer {

typedef std::int32_t i16v __attribute__((vector_size(64)));

namespace fast_math_detail {
ONEGPU_INLINE std::int32_t bits_of(float x) { std::int32_t b; std::memcpy(&b, &x, 4); return b; }
ONEGPU_INLINE i16v bits_of(v16 x) { return (i16v)x; }
ONEGPU_INLINE float from_bits(std::int32_t b) { float x; std::memcpy(&x, &b, 4); return x; }
ONEGPU_INLINE v16 from_bits(i16v b) { return (v16)b; }
ONEGPU_INLINE float clamp(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
ONEGPU_INLINE v16 clamp(v16 x, float lo, float hi) {
  const v16 l = v16{} + lo, h = v16{} + hi;
  x = x < l ? l : x;
  return x > h ? h : x;
}
}  // namespace fast_math_detail

template <class F>
ONEGPU_INLINE F fast_exp_t(F x) {
  using namespace fast_math_detail;
  constexpr float kMagic = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer in the low bits
  x = clamp(x, -87.f, 88.f);
  const F t = x * 1.44269504088896341f + kMagic;  // round(x / ln2), held in t's mantissa
  const F kf = t - kMagic;
  const auto k = bits_of(t) - bits_of(kMagic);     // the same integer, as int
  const F r = (x - kf * 0.693145751953125f) - kf * 1.428606765330187045e-06f;
  F p = r * (1.f / 5040.f) + 1.f / 720.f;
  p = p * r + 1.f / 120.f;
  p = p * r + 1.f / 24.f;
  p = p * r + 1.f / 6.f;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  return p * from_bits((k + 127) << 23);
}

ONEGPU_INLINE float fast_exp(float x) { return fast_exp_t(x); }
ONEGPU_INLINE v16 fast_exp(v16 x) { return fast_exp_t(x); }

// Applies fn (v16 -> v16, or (v16, v16) -> v16) to n elements 16 at a time; the last partial
// group is padded through a stack buffer so it runs the same vector code as the rest.
template <class Fn>
ONEGPU_INLINE void for_each16(const float* in, float* out, std::int64_t n, Fn fn) {  // in == out is fine
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    v16 x;
    std::memcpy(&x, in + i, sizeof x);
    x = fn(x);
    std::memcpy(out + i, &x, sizeof x);
  }
  if (i < n) {
    alignas(64) float buf[16] = {};
    std::memcpy(buf, in + i, sizeof(float) * (n - i));
    v16 x;
    std::memcpy(&x, buf, sizeof x);
    x = fn(x);
    std::memcpy(buf, &x, sizeof x);
    std::memcpy(out + i, buf, sizeof(float) * (n - i));
  }
}
template <class Fn>
ONEGPU_INLINE void for_each16(const float* a, const float* b, float* out, std::int64_t n, Fn fn) {
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    v16 x, y;
    std::memcpy(&x, a + i, sizeof x);
    std::memcpy(&y, b + i, sizeof y);
    x = fn(x, y);
    std::memcpy(out + i, &x, sizeof x);
  }
  if (i < n) {
    alignas(64) float ba[16] = {}, bb[16] = {};
    std::memcpy(ba, a + i, sizeof(float) * (n - i));
    std::memcpy(bb, b + i, sizeof(float) * (n - i));
    v16 x, y;
    std::memcpy(&x, ba, sizeof x);
    std::memcpy(&y, bb, sizeof y);
    x = fn(x, y);
    std::memcpy(ba, &x, sizeof x);
    std::memcpy(out + i, ba, sizeof(float) * (n - i));
  }
}

}  // namespace onegpu::trainer
