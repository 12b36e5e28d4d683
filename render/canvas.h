#pragma once
// What scenes draw on: shapes and text in layers, flushed in order, each layer costing at most
// two draw calls (its shapes, then its text) however much it holds.
#include <array>
#include <memory>
#include <numbers>
#include <string_view>

#include "render/camera.h"
#include "render/sdf_font.h"
#include "render/shape_batch.h"

namespace onegpu::render {

class Canvas {
 public:
  static constexpr int kLayers = 4;
  Canvas(const Shader* shapes, const Shader* text, const SdfFont* font);

  void set_layer(int i) { layer_ = i < 0 ? 0 : i >= kLayers ? kLayers - 1 : i; }
  int layer() const { return layer_; }

  // Sizes and positions in world units.
  void box(const Rect& r, glm::vec4 fill, float radius = 0.0f, glm::vec4 stroke = {}, float stroke_w = 0.0f);
  void hatched(const Rect& r, glm::vec4 bg, glm::vec4 lines, float spacing, float line_w,
               float radius = 0.0f, glm::vec4 stroke = {}, float stroke_w = 0.0f);
  void glow(const Rect& r, glm::vec4 color, float radius, float spread);
  void ring(glm::vec2 c, float radius, float thickness, glm::vec4 color, float start = 0.0f,
            float sweep = 2.0f * std::numbers::pi_v<float>);
  void disc(glm::vec2 c, float radius, glm::vec4 color);
  void line(glm::vec2 a, glm::vec2 b, float width, glm::vec4 color);
  float text(std::string_view s, glm::vec2 baseline, float size, glm::vec4 color, Align a = Align::Left);
  float text_width(std::string_view s, float size) const { return font_->measure(s) * size; }
  const SdfFont& font() const { return *font_; }

  void flush(const Camera& cam, DrawStats& stats);
  std::size_t shape_count() const;

 private:
  struct Layer {
    std::unique_ptr<ShapeBatch> shapes;
    std::unique_ptr<TextBatch> text;
  };
  ShapeBatch& shapes() { return *layers_[layer_].shapes; }
  const SdfFont* font_;
  std::array<Layer, kLayers> layers_;
  int layer_ = 0;
};

}  // namespace onegpu::render
