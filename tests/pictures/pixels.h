#pragma once
// Small helpers to read rendered images in tests.
#include <cstdint>
#include <functional>
#include <vector>

#include <glm/vec2.hpp>

struct Rgb {
  int r, g, b;
};

struct Image {
  int w = 0, h = 0;
  const std::vector<std::uint8_t>* px = nullptr;
  Rgb at(int x, int y) const {
    const std::uint8_t* p = &(*px)[(static_cast<std::size_t>(y) * w + x) * 4];
    return {p[0], p[1], p[2]};
  }
};

struct Blob {
  int pixels = 0;
  glm::vec2 centroid{0.0f};
};

// 4-connected components of the pixels where `keep` holds, inside [x0,x1)×[y0,y1).
std::vector<Blob> blobs(const Image& img, int x0, int y0, int x1, int y1, const std::function<bool(Rgb)>& keep);

// The palette's fills as they come out of the renderer (anti-aliasing allowed for). Tests that
// need looser matchers (fills under translucent overlays) keep their own.
namespace fills {
inline bool lavender(Rgb c) { return c.r > 140 && c.b > 200 && c.g > 130 && c.g < 190 && c.r < c.b; }
inline bool pink(Rgb c) { return c.r > 200 && c.g < 140 && c.b > 120 && c.b < 190; }
inline bool amber(Rgb c) { return c.r > 150 && c.g > 90 && c.g < 190 && c.b < 100 && c.r > c.g + 40; }
}  // namespace fills
