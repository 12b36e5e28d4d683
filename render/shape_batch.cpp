#include "render/shape_batch.h"

#include <glm/gtc/type_ptr.hpp>

#include "render/gl.h"

namespace onegpu::render {

ShapeBatch::ShapeBatch(const Shader* shader) : shader_(shader) {
  glGenVertexArrays(1, &vao_);
  glBindVertexArray(vao_);
  const float corners[] = {-1, -1, 1, -1, -1, 1, 1, 1};
  glGenBuffers(1, &corners_);
  glBindBuffer(GL_ARRAY_BUFFER, corners_);
  glBufferData(GL_ARRAY_BUFFER, sizeof corners, corners, GL_STATIC_DRAW);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, nullptr);
  glGenBuffers(1, &instances_);
  glBindBuffer(GL_ARRAY_BUFFER, instances_);
  for (int i = 0; i < 6; ++i) {
    glEnableVertexAttribArray(1 + i);
    glVertexAttribPointer(1 + i, 4, GL_FLOAT, GL_FALSE, sizeof(ShapeInstance),
                          reinterpret_cast<void*>(sizeof(glm::vec4) * i));
    glVertexAttribDivisor(1 + i, 1);
  }
  glBindVertexArray(0);
}

ShapeBatch::~ShapeBatch() {
  glDeleteBuffers(1, &instances_);
  glDeleteBuffers(1, &corners_);
  glDeleteVertexArrays(1, &vao_);
}

void ShapeBatch::flush(const Camera& cam, DrawStats& stats) {
  if (items_.empty()) return;
  glBindVertexArray(vao_);
  glBindBuffer(GL_ARRAY_BUFFER, instances_);
  std::size_t bytes = items_.size() * sizeof(ShapeInstance);
  if (items_.size() > capacity_) {
    capacity_ = items_.size() * 2;
    glBufferData(GL_ARRAY_BUFFER, capacity_ * sizeof(ShapeInstance), nullptr, GL_STREAM_DRAW);
  }
  glBufferSubData(GL_ARRAY_BUFFER, 0, bytes, items_.data());
  shader_->use();
  glUniformMatrix4fv(shader_->uniform("u_vp"), 1, GL_FALSE, glm::value_ptr(cam.view_projection()));
  glUniform1f(shader_->uniform("u_wpp"), cam.world_per_pixel());
  glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, static_cast<int>(items_.size()));
  stats.draw_calls += 1;
  stats.instances += items_.size();
  glBindVertexArray(0);
  items_.clear();
}

}  // namespace onegpu::render
