#include "app/ui/panel_backdrop.h"

#include <algorithm>

#include <imgui_impl_opengl3.h>

#include "render/gl.h"

namespace onegpu::app {

namespace {

bool same(const PixelBox& a, const PixelBox& b) { return a.x0 == b.x0 && a.y0 == b.y0 && a.x1 == b.x1 && a.y1 == b.y1; }

// The parts of `r` outside `hole` (at most four, disjoint), appended to `out`.
void subtract(const PixelBox& r, const PixelBox& hole, std::vector<PixelBox>& out) {
  const PixelBox in{std::max(r.x0, hole.x0), std::max(r.y0, hole.y0), std::min(r.x1, hole.x1), std::min(r.y1, hole.y1)};
  if (in.empty()) {
    out.push_back(r);
    return;
  }
  for (const PixelBox& p : {PixelBox{r.x0, r.y0, r.x1, in.y0}, PixelBox{r.x0, in.y1, r.x1, r.y1},
                            PixelBox{r.x0, in.y0, in.x0, in.y1}, PixelBox{in.x1, in.y0, r.x1, in.y1}})
    if (!p.empty()) out.push_back(p);
}

// A rectangle of pixels, top-left origin, as the GL rectangle (bottom-left origin) the layer takes.
render::RetainedLayer::Rect gl_rect(const PixelBox& r, int fb_h) { return {r.x0, fb_h - r.y1, r.x1 - r.x0, r.y1 - r.y0}; }

}  // namespace

bool PanelBackdrop::draw(const ImDrawData& dd, int fb_w, int fb_h, const PixelBox& scene, glm::vec4 panel_bg,
                         glm::vec4 scene_bg) {
  redrawn_ = 0;
  if (!FrameDamage::tracks(dd)) {
    valid_ = false;
    return false;
  }
  const bool whole = layer_.resize(fb_w, fb_h) || !valid_ || !same(scene, scene_) || panel_bg != panel_bg_ ||
                     scene_bg != scene_bg_;
  damage_.update(dd, fb_w, fb_h, {}, whole);
  valid_ = true, scene_ = scene, panel_bg_ = panel_bg, scene_bg_ = scene_bg;
  if (!damage_.rects().empty()) {
    outside_.clear();
    for (const PixelBox& r : damage_.rects()) subtract(r, scene, outside_);
    layer_.begin();
    glBindVertexArray(0);
    if (whole) layer_.clear(scene_bg, gl_rect(scene, fb_h));  // the scene's ground, once
    for (const PixelBox& r : outside_) {
      layer_.clear(panel_bg, gl_rect(r, fb_h));
      redrawn_ += r.area();
    }
    glDisable(GL_SCISSOR_TEST);
    if (!outside_.empty()) {
      glViewport(0, 0, fb_w, fb_h);
      ImGui_ImplOpenGL3_RenderDrawData(damage_.clipped_to(dd, outside_));
    }
    layer_.end();
  }
  layer_.copy({0, 0, fb_w, fb_h});
  glDisable(GL_SCISSOR_TEST);
  return true;
}

void PanelBackdrop::draw_over(const ImDrawData& dd) {
  if (!damage_.reaches(scene_)) return;
  const std::vector<PixelBox> scene{scene_};
  ImGui_ImplOpenGL3_RenderDrawData(damage_.clipped_to(dd, scene));
}

}  // namespace onegpu::app
