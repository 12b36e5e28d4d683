#include "render/shape_batch.h"

#include <glm/gtc/type_ptr.hpp>

#include "render/gl.h"

namespace onegpu::render {

ShapeBatch::ShapeBatch(const Shader* shader)
    : shader_(shader), quad_({-1, -1, 1, -1, -1, 1, 1, 1}, sizeof(ShapeInstance), 6) {}

void ShapeBatch::flush(const Camera& cam, DrawStats& stats) {
  if (items_.empty()) return;
  shader_->use();
  glUniformMatrix4fv(shader_->uniform("u_vp"), 1, GL_FALSE, glm::value_ptr(cam.view_projection()));
  glUniform1f(shader_->uniform("u_wpp"), cam.world_per_pixel());
  quad_.draw(items_.data(), items_.size());
  stats.draw_calls += 1;
  stats.instances += items_.size();
  items_.clear();
}

}  // namespace onegpu::render
