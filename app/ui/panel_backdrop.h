#pragma once
// The story's panels kept between frames, and the ground every story frame starts from.
//
// On a software rasteriser a story frame paid for pixels that rarely change: the panels' text
// (the chapter list, the caption, the status bar) shaded again every frame, and the scene's
// background cleared by a scissored clear, which llvmpipe draws as a shaded quad over the whole
// picture. PanelBackdrop keeps the frame's ground in a retained layer: the panel colour, the
// scene's rectangle in its background colour, and the panels' ImGui triangles outside that
// rectangle, drawn again only where FrameDamage finds they changed. Each frame copies it whole
// into the framebuffer (a memory copy on llvmpipe), the scene is drawn over it without a clear,
// and then the panel triangles that reach into the scene's rectangle (its edge's border line,
// a toast, the key list), scissored to it.
//
//   if (backdrop.draw(dd, w, h, scene, panel_bg, scene_bg)) { ...scene, no clear...; backdrop.draw_over(dd); }
//   else { ...clear, scene, all of dd, as before... }
//
// The pixels are those of clearing, drawing the scene and then every panel triangle: outside
// the scene's rectangle the scene draws nothing (it is scissored to it), so the kept layer holds
// there what the panels drew over the clear; inside it, the ground, the scene and the triangles
// that reach it come in the same order as before.
#include <vector>

#include <imgui.h>
#include <glm/vec4.hpp>

#include "app/ui/frame_damage.h"
#include "render/retained_layer.h"

namespace onegpu::app {

class PanelBackdrop {
 public:
  // Brings the kept layer up to date with this frame's panels (`dd`, rendered) and copies it
  // whole into the bound draw framebuffer (fb_w × fb_h; the scissor test is left off). `scene`:
  // the scene's rectangle, top-left origin. Returns false, having drawn nothing, when the draw
  // data cannot be tracked (FrameDamage::tracks).
  bool draw(const ImDrawData& dd, int fb_w, int fb_h, const PixelBox& scene, glm::vec4 panel_bg, glm::vec4 scene_bg);
  // After the scene: the panel triangles that reach into its rectangle, scissored to it.
  void draw_over(const ImDrawData& dd);
  // The layer's glyphs are stale (the fonts were rebuilt): the next draw() redraws it whole.
  void invalidate() { valid_ = false; }
  // The layer's pixels the last draw() drew again (0 when no panel changed).
  long redrawn() const { return redrawn_; }

 private:
  render::RetainedLayer layer_;
  FrameDamage damage_;
  std::vector<PixelBox> outside_;  // this frame's damage, less the scene's rectangle
  PixelBox scene_;
  glm::vec4 panel_bg_{-1.0f}, scene_bg_{-1.0f};
  bool valid_ = false;
  long redrawn_ = 0;
};

}  // namespace onegpu::app
