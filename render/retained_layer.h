#pragma once
// A retained layer: an offscreen colour target that keeps what was drawn into it from one frame
// to the next, and copies itself into the framebuffer being drawn. A view whose picture changes
// rarely (or only grows) draws into it when it changes and copies it every frame, which on a
// software rasteriser is a memory copy instead of shading every primitive again.
//
//   RetainedLayer layer;                        // as big as the frame it is copied into
//   if (layer.resize(w, h) || changed) { layer.begin(); layer.clear(c, rect); ...draw...; layer.end(); }
//   layer.copy(rect);   // that rectangle, into the same place of the bound draw framebuffer
//
// It is as big as the frame so that what is drawn into it goes through the same transforms and
// lands on exactly the pixels (and sub-pixel positions) it would have in the frame: the copy is
// bit for bit what drawing straight into the frame gives. It does not track what changed: the
// owner keys its content and draws it again.
#include <glm/vec4.hpp>

namespace onegpu::render {

class RetainedLayer {
 public:
  RetainedLayer() = default;
  ~RetainedLayer();
  RetainedLayer(const RetainedLayer&) = delete;
  RetainedLayer& operator=(const RetainedLayer&) = delete;

  // Sizes the target (pixels). Returns true when it was (re)allocated: its content is undefined.
  bool resize(int width, int height);
  int width() const { return w_; }
  int height() const { return h_; }
  // Draws go to the layer between begin() and end(); end() rebinds the framebuffer and viewport
  // that were bound at begin().
  void begin();
  void end();
  // A rectangle of pixels, bottom-left origin (GL's).
  struct Rect {
    int x = 0, y = 0, w = 0, h = 0;
  };
  // Between begin() and end(): clears `r` to `colour`; later draws are scissored to it.
  void clear(glm::vec4 colour, Rect r);
  // Copies `r` of the layer to the same place in the bound draw framebuffer (scissored to `r`).
  void copy(Rect r) const;

 private:
  unsigned fbo_ = 0, color_ = 0;
  int w_ = 0, h_ = 0;
  int saved_fbo_ = 0, saved_viewport_[4] = {0, 0, 0, 0};
};

}  // namespace onegpu::render
