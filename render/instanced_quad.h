#pragma once
// The GL plumbing every instanced batch shares: a four-corner quad, a per-instance buffer of
// vec4 attributes (locations 1..n), growing as needed, and one instanced draw.
#include <array>
#include <cstddef>

namespace onegpu::render {

class InstancedQuad {
 public:
  // corners: the quad's four (x, y) corners as a triangle strip; attributes: vec4s per instance.
  InstancedQuad(const std::array<float, 8>& corners, std::size_t stride, int attributes);
  ~InstancedQuad();
  InstancedQuad(const InstancedQuad&) = delete;
  InstancedQuad& operator=(const InstancedQuad&) = delete;

  // Uploads `count` instances of `stride` bytes and draws them in one call (VAO bound inside).
  void draw(const void* data, std::size_t count);

 private:
  unsigned vao_ = 0, corners_ = 0, instances_ = 0;
  std::size_t stride_, capacity_ = 0;
};

}  // namespace onegpu::render
