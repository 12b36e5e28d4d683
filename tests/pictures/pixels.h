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
