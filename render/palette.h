#pragma once
// The program's colours, fixed once. Every scene and panel takes its colours from here so
// that amber always means forward, pink backward, lavender weights, sand optimizer state.
#include <glm/vec4.hpp>

namespace onegpu::render {

constexpr glm::vec4 rgb(unsigned hex, float a = 1.0f) {
  return {((hex >> 16) & 0xff) / 255.0f, ((hex >> 8) & 0xff) / 255.0f, (hex & 0xff) / 255.0f, a};
}

namespace palette {
// Field and chips.
inline constexpr glm::vec4 background = rgb(0x0a0d14);
inline constexpr glm::vec4 background_edge = rgb(0x05070b);
inline constexpr glm::vec4 chip_off = rgb(0x161b26);
inline constexpr glm::vec4 chip_off_edge = rgb(0x242b3a);
inline constexpr glm::vec4 chip_body = rgb(0x1f2635);
inline constexpr glm::vec4 chip_edge = rgb(0x3a4560);
inline constexpr glm::vec4 substrate = rgb(0x141a25);
inline constexpr glm::vec4 lit = rgb(0x8ec5ff);        // a chip switched on / compute at work
inline constexpr glm::vec4 lit_dim = rgb(0x2c4466);
inline constexpr glm::vec4 focus = rgb(0xf6f1e4);      // the ring around the GPU we follow
inline constexpr glm::vec4 memory = rgb(0x7d8db3);     // memory stacks (HBM), outline
inline constexpr glm::vec4 memory_fill = rgb(0x33405c);
// Training.
inline constexpr glm::vec4 forward = rgb(0xf5a524);    // amber
inline constexpr glm::vec4 backward = rgb(0xef6b9a);   // pink: backward and gradients
inline constexpr glm::vec4 weights = rgb(0xb9a7f2);    // lavender: weights and gradients
inline constexpr glm::vec4 optimizer = rgb(0xd9c29a);  // sand: optimizer state
inline constexpr glm::vec4 waiting = rgb(0x5a6275);    // hatching for idle time
inline constexpr glm::vec4 waiting_bg = rgb(0x222733);
// Text.
inline constexpr glm::vec4 text = rgb(0xe8ecf4);
inline constexpr glm::vec4 text_dim = rgb(0x9aa4b8);
inline constexpr glm::vec4 text_faint = rgb(0x5c6679);
}  // namespace palette

inline glm::vec4 with_alpha(glm::vec4 c, float a) { return {c.r, c.g, c.b, c.a * a}; }
inline glm::vec4 mix(glm::vec4 a, glm::vec4 b, float t) { return a + (b - a) * t; }

}  // namespace onegpu::render
