#pragma once
// A 64-bit hash of bytes: words through a multiply-xorshift mix. For telling a frame's drawn
// items apart from the last frame's (damage tracking), not for anything adversarial.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace onegpu::render {

inline std::uint64_t hash_mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

inline std::uint64_t hash_bytes(std::uint64_t h, const void* p, std::size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (; n >= 8; n -= 8, b += 8) {
    std::uint64_t v;
    std::memcpy(&v, b, 8);
    h = hash_mix(h, v);
  }
  std::uint64_t v = 0;
  std::memcpy(&v, b, n);
  return hash_mix(h, v ^ n);
}

}  // namespace onegpu::render
