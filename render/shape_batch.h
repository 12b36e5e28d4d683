#pragma once
// Instanced shapes drawn from signed distance functions: rounded boxes (filled, outlined or
// hatched), glows, rings, discs and arcs, and line segments with round caps. All instances of
// a batch go to the GPU in one upload, drawn by a call per run of one kind of shape
// (render/shape_programs.h), however many there are.
#include <cstddef>
#include <vector>

#include <glm/vec2.hpp>
#include <glm/ext/vector_int4.hpp>
#include <glm/vec4.hpp>

#include "render/camera.h"
#include "render/instanced_quad.h"
#include "render/shader.h"
#include "render/shape_programs.h"

namespace onegpu::render {

struct ShapeInstance {
  glm::vec4 geom;    // box/glow/ring: centre.xy, half-size.xy; segment: p0.xy, p1.xy
  glm::vec4 fill;    // straight alpha
  glm::vec4 stroke;  // outline colour (drawn inside the edge)
  glm::vec4 params;  // x: corner radius (ring: inner radius), y: outline width, z: kind, w: glow width
  glm::vec4 extra;   // ring: start angle, sweep; segment: half width; box: hatch spacing, hatch width
  glm::vec4 hatch;   // box: hatch line colour; ring: the arc's start and end directions (cos, sin each)
  // The part of the shape's quad to shade, world min.xy, max.xy (not for segments); all zero:
  // the whole quad. Canvas::flush trims the part a later opaque box hides (Canvas::trim_hidden).
  glm::vec4 part{0.0f};
};

enum class ShapeKind { Box = 0, Ring = 1, Segment = 2, Glow = 3 };

struct DrawStats {
  int draw_calls = 0;
  std::size_t instances = 0;  // shapes and glyphs drawn
  std::size_t left_out = 0;   // shapes and glyphs that would not have changed a pixel (Canvas::flush)
};

// What a frame may leave out without changing a pixel (Canvas::flush uses these).
// The quad the shape shader shades for `s`: its edge, grown by the anti-aliasing pixel and a
// glow's spread (shape.vert), in world units; `wpp` is world units per pixel.
Rect shape_bounds(const ShapeInstance& s, float wpp);
// Whether `s` leaves every pixel as it was: each of its colours is fully transparent.
bool shape_invisible(const ShapeInstance& s);
// Where `s` writes opaque pixels whatever lies under them: an opaque box without hatching, inside
// its corners, its outline and its anti-aliased edge. Empty (zero size) for anything else.
Rect opaque_interior(const ShapeInstance& s, float wpp);

class ShapeBatch {
 public:
  explicit ShapeBatch(const ShapePrograms* programs);
  ShapeBatch(const ShapeBatch&) = delete;
  ShapeBatch& operator=(const ShapeBatch&) = delete;

  void add(const ShapeInstance& s) { items_.push_back(s); }
  std::size_t size() const { return items_.size(); }
  // The shapes added since the last flush, in drawing order (the canvas leaves out unseen ones).
  std::vector<ShapeInstance>& items() { return items_; }
  const std::vector<ShapeInstance>& items() const { return items_; }
  void clear() { items_.clear(); }
  // Uploads and draws everything added since the last clear, in order: one instanced call per run.
  // With `clips` (scissor boxes in framebuffer pixels: x, y from the bottom-left, w, h), the
  // upload is drawn once inside each box instead (a frame redrawn only where it changed).
  void flush(const Camera& cam, DrawStats& stats, const std::vector<glm::ivec4>* clips = nullptr);

 private:
  const ShapePrograms* programs_;
  InstancedQuad quad_;
  std::vector<ShapeInstance> items_;
  std::vector<ShapeRun> runs_;  // kept between frames: no allocation a frame
};

}  // namespace onegpu::render
