#pragma once
// Owns the GL state every scene shares: the shape and text programs, the scene font, and two
// canvases (one in world units under the scene camera, one in pixels for overlays).
#include <filesystem>
#include <memory>

#include "render/canvas.h"

namespace onegpu::render {

struct AssetPaths {
  std::filesystem::path shader_dir;
  std::filesystem::path font;  // scene font (TTF or OTF)
};

class Renderer {
 public:
  // Throws render::Error naming a missing or broken shader or font file.
  explicit Renderer(const AssetPaths& assets);

  Canvas& world() { return *world_; }
  Canvas& screen() { return *screen_; }
  const SdfFont& font() const { return *font_; }

  // Clears the viewport (x, y from the bottom-left, in framebuffer pixels) and sets up blending.
  void begin(int x, int y, int w, int h, glm::vec4 clear);
  // The same without the clear: the viewport already holds its ground (a backdrop copied in,
  // app/ui/panel_backdrop.h). On llvmpipe a clear of part of the frame is a shaded quad.
  void begin(int x, int y, int w, int h);
  // The text rule for this frame (call after begin, before drawing): what `cam` shows of the
  // world canvas, the whole viewport for the screen canvas, and the smallest label's em in
  // pixels (render/text_rule.h). Labels drawn after it are logged in labels().
  void set_text_rule(const Camera& cam, float min_px);
  // Draws the world canvas under `cam`, then the screen canvas in pixel units (y up).
  void end(const Camera& cam);
  const LabelLog& labels() const { return labels_; }
  const DrawStats& stats() const { return stats_; }

 private:
  ShapePrograms shape_programs_;
  Shader text_shader_;
  std::unique_ptr<SdfFont> font_;
  std::unique_ptr<Canvas> world_, screen_;
  DrawStats stats_;
  LabelLog labels_;
  int vx_ = 0, vy_ = 0, vw_ = 1, vh_ = 1;
  bool warm_ = false;  // every shape program has drawn once (begin)
};

}  // namespace onegpu::render
