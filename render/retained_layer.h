#pragma once
// A retained layer: an offscreen colour target that keeps what was drawn into it from one frame
// to the next, and copies itself into the framebuffer being drawn. A view whose picture changes
// rarely (or only grows) draws into it when it changes and copies it every frame, which on a
// software rasteriser is a memory copy instead of shading every primitive again.
//
//   RetainedLayer layer;
//   if (layer.resize(w, h) || changed) { layer.begin(); ...draw in layer pixels...; layer.end(); }
//   layer.copy_to(x, y);   // into the bound draw framebuffer, bottom-left origin
//
// It does not track what changed: the owner keys its content and redraws it (begin() clears
// nothing by itself; clear() does).
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
  void clear(glm::vec4 colour);  // between begin() and end()
  // Copies the whole layer into the bound draw framebuffer with its bottom-left corner at (x, y).
  // The scissor test is left as it was.
  void copy_to(int x, int y) const;

 private:
  unsigned fbo_ = 0, color_ = 0;
  int w_ = 0, h_ = 0;
  int saved_fbo_ = 0, saved_viewport_[4] = {0, 0, 0, 0};
};

}  // namespace onegpu::render
