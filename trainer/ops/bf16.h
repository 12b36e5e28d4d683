#pragma once
// bfloat16 storage: the top 16 bits of an IEEE float. Weights live in this format; maths runs
// in fp32 after unpacking.
#include <cstdint>
#include <cstring>

namespace onegpu::trainer {

using bf16 = std::uint16_t;

inline float bf16_to_float(bf16 h) {
  std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even; NaN stays NaN.
inline bf16 float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return static_cast<bf16>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<bf16>(u >> 16);
}

}  // namespace onegpu::trainer
