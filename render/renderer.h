#pragma once
// Owns the GL state every scene shares: the shape and text programs, the scene font, and two
// canvases (one in world units under the scene camera, one in pixels for overlays).
#include <filesystem>
#include <memory>
#include <vector>

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
  // `clear` false leaves the pixels as they are (end_clipped clears where it draws).
  void begin(int x, int y, int w, int h, glm::vec4 clear, bool clear_now = true);
  // The text rule for this frame (call after begin, before drawing): what `cam` shows of the
  // world canvas, the whole viewport for the screen canvas, and the smallest label's em in
  // pixels (render/text_rule.h). Labels drawn after it are logged in labels().
  void set_text_rule(const Camera& cam, float min_px);
  // Draws the world canvas under `cam`, then the screen canvas in pixel units (y up).
  void end(const Camera& cam);
  // Redrawing a kept frame only where it changed: after drawing, prepare(cam) settles what
  // will be drawn, drawn_items() lists it (DrawnItem; viewport pixels from the top-left, the
  // world canvas's then the screen canvas's), and end_clipped() clears each of `clips`
  // (framebuffer pixels: x, y from the bottom-left, w, h; disjoint, inside the viewport) to
  // `clear` and draws both canvases inside them, in place of end().
  void prepare(const Camera& cam);
  void drawn_items(std::vector<DrawnItem>& out) const;
  void end_clipped(const std::vector<glm::ivec4>& clips, glm::vec4 clear);
  const LabelLog& labels() const { return labels_; }
  const DrawStats& stats() const { return stats_; }

 private:
  ShapePrograms shape_programs_;
  Shader text_shader_;
  std::unique_ptr<SdfFont> font_;
  std::unique_ptr<Canvas> world_, screen_;
  DrawStats stats_;
  LabelLog labels_;
  Camera pixel_camera() const;  // the screen canvas's: a unit a pixel, y up
  int vx_ = 0, vy_ = 0, vw_ = 1, vh_ = 1;
  Camera prepared_cam_;
  bool warm_ = false;  // every shape program has drawn once (begin)
};

}  // namespace onegpu::render
