#include "render/instanced_quad.h"

#include "render/gl.h"

namespace onegpu::render {

InstancedQuad::InstancedQuad(const std::array<float, 8>& corners, std::size_t stride, int attributes)
    : stride_(stride), attributes_(attributes) {
  glGenVertexArrays(1, &vao_);
  glBindVertexArray(vao_);
  glGenBuffers(1, &corners_);
  glBindBuffer(GL_ARRAY_BUFFER, corners_);
  glBufferData(GL_ARRAY_BUFFER, sizeof(float) * corners.size(), corners.data(), GL_STATIC_DRAW);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, nullptr);
  glGenBuffers(1, &instances_);
  glBindBuffer(GL_ARRAY_BUFFER, instances_);
  for (int i = 0; i < attributes; ++i) {
    glEnableVertexAttribArray(1 + i);
    glVertexAttribDivisor(1 + i, 1);
  }
  point_attributes(0);
  glBindVertexArray(0);
}

void InstancedQuad::point_attributes(std::size_t first) {
  // GL 3.3 has no base instance: the attributes are pointed at the run's first instance.
  for (int i = 0; i < attributes_; ++i)
    glVertexAttribPointer(1 + i, 4, GL_FLOAT, GL_FALSE, static_cast<GLsizei>(stride_),
                          reinterpret_cast<void*>(first * stride_ + sizeof(float) * 4 * i));
  pointed_at_ = first;
}

InstancedQuad::~InstancedQuad() {
  glDeleteBuffers(1, &instances_);
  glDeleteBuffers(1, &corners_);
  glDeleteVertexArrays(1, &vao_);
}

void InstancedQuad::draw(const void* data, std::size_t count) {
  upload(data, count);
  draw_range(0, count);
}

void InstancedQuad::upload(const void* data, std::size_t count) {
  glBindBuffer(GL_ARRAY_BUFFER, instances_);
  if (count > capacity_) {
    capacity_ = count * 2;
    glBufferData(GL_ARRAY_BUFFER, capacity_ * stride_, nullptr, GL_STREAM_DRAW);
  }
  glBufferSubData(GL_ARRAY_BUFFER, 0, count * stride_, data);
}

void InstancedQuad::draw_range(std::size_t first, std::size_t count) {
  glBindVertexArray(vao_);
  if (first != pointed_at_) {
    glBindBuffer(GL_ARRAY_BUFFER, instances_);
    point_attributes(first);
  }
  glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, static_cast<GLsizei>(count));
  glBindVertexArray(0);
}

}  // namespace onegpu::render
