#pragma once
// A 2D camera over the scene's world (y up). It knows which world point sits at the centre of
// the viewport and how much world height the viewport shows; zooming is changing that height.
#include <glm/mat4x4.hpp>
#include <glm/vec2.hpp>

namespace onegpu::render {

struct Rect {
  glm::vec2 min{0.0f}, max{0.0f};
  glm::vec2 center() const { return (min + max) * 0.5f; }
  glm::vec2 size() const { return max - min; }
  bool contains(glm::vec2 p) const {
    return p.x >= min.x && p.x <= max.x && p.y >= min.y && p.y <= max.y;
  }
  static Rect centered(glm::vec2 c, glm::vec2 size) { return {c - size * 0.5f, c + size * 0.5f}; }
};

struct Camera {
  glm::vec2 center{0.0f};
  float height = 1.0f;         // world units from bottom to top of the viewport
  glm::vec2 viewport{1.0f};    // pixels

  float aspect() const { return viewport.x / viewport.y; }
  float world_per_pixel() const { return height / viewport.y; }
  glm::mat4 view_projection() const;
  glm::vec2 world_to_pixel(glm::vec2 w) const;  // pixel origin top-left, y down
  glm::vec2 pixel_to_world(glm::vec2 p) const;
  Rect visible() const;

  // The camera that shows `r` whole, centred, with `margin` (fraction) of room around it.
  static Camera fit(const Rect& r, glm::vec2 viewport, float margin = 0.05f);
};

// A dive between two cameras: the height changes geometrically (so zoom feels even) and the
// centre moves so that the one world point both cameras agree on stays fixed on screen.
// x in [0,1]; x=0 gives a, x=1 gives b.
Camera dive(const Camera& a, const Camera& b, float x);

}  // namespace onegpu::render
