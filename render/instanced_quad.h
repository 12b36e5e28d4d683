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
  // The same in two steps, for a batch drawn in runs: upload every instance once, then draw
  // instances [first, first + count) of the upload (one call each).
  void upload(const void* data, std::size_t count);
  void draw_range(std::size_t first, std::size_t count);

 private:
  void point_attributes(std::size_t first);  // the instance attributes start at instance `first`
  unsigned vao_ = 0, corners_ = 0, instances_ = 0;
  std::size_t stride_, capacity_ = 0;
  int attributes_;
  std::size_t pointed_at_ = 0;  // the instance the attributes start at now
};

}  // namespace onegpu::render
