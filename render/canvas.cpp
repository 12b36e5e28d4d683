#include "render/canvas.h"

namespace onegpu::render {

Canvas::Canvas(const Shader* shapes, const Shader* text, const SdfFont* font) : font_(font) {
  for (auto& l : layers_) {
    l.shapes = std::make_unique<ShapeBatch>(shapes);
    l.text = std::make_unique<TextBatch>(text, font);
  }
}

static float kind(ShapeKind k) { return static_cast<float>(static_cast<int>(k)); }

void Canvas::box(const Rect& r, glm::vec4 fill, float radius, glm::vec4 stroke, float stroke_w) {
  glm::vec2 c = r.center(), h = r.size() * 0.5f;
  shapes().add({{c, h}, fill, stroke, {radius, stroke_w, kind(ShapeKind::Box), 0}, {}, {}});
}

void Canvas::hatched(const Rect& r, glm::vec4 bg, glm::vec4 lines, float spacing, float line_w,
                     float radius, glm::vec4 stroke, float stroke_w) {
  glm::vec2 c = r.center(), h = r.size() * 0.5f;
  shapes().add({{c, h}, bg, stroke, {radius, stroke_w, kind(ShapeKind::Box), 0},
                {spacing, line_w, 0, 0}, lines});
}

void Canvas::glow(const Rect& r, glm::vec4 color, float radius, float spread) {
  glm::vec2 c = r.center(), h = r.size() * 0.5f;
  shapes().add({{c, h}, color, {}, {radius, 0, kind(ShapeKind::Glow), spread}, {}, {}});
}

void Canvas::ring(glm::vec2 c, float radius, float thickness, glm::vec4 color, float start, float sweep) {
  shapes().add({{c, radius, radius}, color, {}, {radius - thickness, 0, kind(ShapeKind::Ring), 0},
                {start, sweep, 0, 0}, {}});
}

void Canvas::disc(glm::vec2 c, float radius, glm::vec4 color) { ring(c, radius, radius, color); }

void Canvas::line(glm::vec2 a, glm::vec2 b, float width, glm::vec4 color) {
  shapes().add({{a, b}, color, {}, {0, 0, kind(ShapeKind::Segment), 0}, {width * 0.5f, 0, 0, 0}, {}});
}

float Canvas::text(std::string_view s, glm::vec2 baseline, float size, glm::vec4 color, Align a) {
  return layers_[layer_].text->add(s, baseline, size, color, a);
}

void Canvas::flush(const Camera& cam, DrawStats& stats) {
  for (auto& l : layers_) {
    l.shapes->flush(cam, stats);
    l.text->flush(cam, stats);
  }
  layer_ = 0;
}

std::size_t Canvas::shape_count() const {
  std::size_t n = 0;
  for (auto& l : layers_) n += l.shapes->size();
  return n;
}

}  // namespace onegpu::render
