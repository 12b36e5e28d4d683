#include "render/camera.h"

#include <algorithm>
#include <cmath>
#include <glm/gtc/matrix_transform.hpp>

namespace onegpu::render {

glm::mat4 Camera::view_projection() const {
  float hw = height * aspect() * 0.5f, hh = height * 0.5f;
  return glm::ortho(center.x - hw, center.x + hw, center.y - hh, center.y + hh, -1.0f, 1.0f);
}

glm::vec2 Camera::world_to_pixel(glm::vec2 w) const {
  float s = viewport.y / height;
  return {(w.x - center.x) * s + viewport.x * 0.5f, viewport.y * 0.5f - (w.y - center.y) * s};
}

glm::vec2 Camera::pixel_to_world(glm::vec2 p) const {
  float s = height / viewport.y;
  return {(p.x - viewport.x * 0.5f) * s + center.x, (viewport.y * 0.5f - p.y) * s + center.y};
}

Rect Camera::visible() const {
  glm::vec2 half{height * aspect() * 0.5f, height * 0.5f};
  return {center - half, center + half};
}

Camera Camera::fit(const Rect& r, glm::vec2 viewport, float margin) {
  Camera c;
  c.viewport = viewport;
  c.center = r.center();
  glm::vec2 s = r.size() * (1.0f + 2.0f * margin);
  c.height = std::max(s.y, s.x / c.aspect());
  if (c.height <= 0.0f) c.height = 1.0f;
  return c;
}

Camera dive(const Camera& a, const Camera& b, float x) {
  x = std::clamp(x, 0.0f, 1.0f);
  Camera c = b;
  c.height = a.height * std::pow(b.height / a.height, x);
  if (std::abs(a.height - b.height) < 1e-6f * a.height) {
    c.center = a.center + (b.center - a.center) * x;
  } else {
    // Fixed point f: it sits at the same screen offset under both cameras,
    // (f - a.c)/a.h == (f - b.c)/b.h. Moving the centre along c(h) = f + (a.c - f) h / a.h
    // keeps it there for every intermediate height.
    glm::vec2 f = (a.center * b.height - b.center * a.height) / (b.height - a.height);
    c.center = f + (a.center - f) * (c.height / a.height);
  }
  return c;
}

}  // namespace onegpu::render
