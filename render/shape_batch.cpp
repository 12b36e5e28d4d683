#include "render/shape_batch.h"

#include <algorithm>

#include <glm/common.hpp>
#include <glm/gtc/type_ptr.hpp>

#include "render/gl.h"

namespace onegpu::render {

namespace {
ShapeKind kind_of(const ShapeInstance& s) { return static_cast<ShapeKind>(static_cast<int>(s.params.z + 0.5f)); }
}  // namespace

Rect shape_bounds(const ShapeInstance& s, float wpp) {
  if (s.part.z > s.part.x && kind_of(s) != ShapeKind::Segment) return {{s.part.x, s.part.y}, {s.part.z, s.part.w}};
  const float pad = wpp + s.params.w;  // as shape.vert grows the quad
  if (kind_of(s) == ShapeKind::Segment) {
    const glm::vec2 a{s.geom.x, s.geom.y}, b{s.geom.z, s.geom.w};
    const float r = s.extra.x + pad;  // half width and the pad, round every side of the capsule
    return {glm::min(a, b) - r, glm::max(a, b) + r};
  }
  const glm::vec2 c{s.geom.x, s.geom.y}, half = glm::vec2{s.geom.z, s.geom.w} + pad;
  return {c - half, c + half};
}

bool shape_invisible(const ShapeInstance& s) {
  const bool stroke = s.params.y > 0.0f && s.stroke.a > 0.0f;
  const bool hatch = kind_of(s) == ShapeKind::Box && s.extra.x > 0.0f && s.hatch.a > 0.0f;
  return s.fill.a <= 0.0f && !stroke && !hatch;
}

Rect opaque_interior(const ShapeInstance& s, float wpp) {
  if (kind_of(s) != ShapeKind::Box || s.fill.a < 1.0f || s.extra.x > 0.0f) return {};
  // Inside this inset the coverage is 1 and the outline's blend weight 0 (shape.frag), so the
  // pixel is the fill, alpha 1: blending keeps nothing of what was under it. The corner radius
  // is taken off every side, which keeps clear of the rounded corners; a pixel more than the
  // half pixel the edge needs keeps clear of rounding.
  const glm::vec2 half{s.geom.z, s.geom.w};
  const float radius = std::min(s.params.x, std::min(half.x, half.y));
  const glm::vec2 in = half - (std::max(radius, 0.0f) + std::max(s.params.y, 0.0f) + wpp);
  if (in.x <= 0.0f || in.y <= 0.0f) return {};
  const glm::vec2 c{s.geom.x, s.geom.y};
  return {c - in, c + in};
}

ShapeBatch::ShapeBatch(const ShapePrograms* programs)
    : programs_(programs), quad_({-1, -1, 1, -1, -1, 1, 1, 1}, sizeof(ShapeInstance), 7) {}

void ShapeBatch::flush(const Camera& cam, DrawStats& stats, const std::vector<glm::ivec4>* clips) {
  if (items_.empty()) return;
  plan_shape_runs(items_.data(), items_.size(), cam.world_per_pixel(), runs_);
  quad_.upload(items_.data(), items_.size());
  const glm::mat4 vp = cam.view_projection();
  for (const ShapeRun& run : runs_) {
    programs_->use(run.variant, glm::value_ptr(vp), cam.world_per_pixel());
    if (!clips) {
      quad_.draw_range(run.first, run.count);
      continue;
    }
    // The boxes are disjoint, so drawing run by run and box by box keeps every pixel's order.
    for (const glm::ivec4& c : *clips) {
      glScissor(c.x, c.y, c.z, c.w);
      quad_.draw_range(run.first, run.count);
    }
  }
  stats.draw_calls += static_cast<int>(runs_.size() * (clips ? clips->size() : 1));
  stats.instances += items_.size();
  items_.clear();
}

}  // namespace onegpu::render
