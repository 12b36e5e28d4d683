#pragma once
// Damage tracking for a frame drawn over a retained copy of the last one (the Lab, App::frame_lab).
// On a software rasteriser every pixel an ImGui window covers is shaded again each frame, though
// while a run trains most of them (the side panel's fields, the bubbles, the labels) do not
// change. FrameDamage compares this frame's ImGui triangles with the last frame's and finds the
// rectangles whose pixels may differ; the frame is then drawn only there, over the last frame.
//
//   FrameDamage damage;
//   damage.update(*ImGui::GetDrawData(), fb_w, fb_h, {scene_rect, ...}, resized);
//   ...clear each damage.rects() to the frame's colour, draw what the caller redraws anyway...
//   ImGui_ImplOpenGL3_RenderDrawData(damage.clipped(*ImGui::GetDrawData()));
//
// What makes the pixels outside the rectangles equal to drawing everything: a pixel's colour
// depends only on the clear colour and the triangles that cover it, in order. A triangle of this
// frame with the same vertices, texture and scissor as one of the last frame (matched by a hash,
// in the same relative order) covers the same pixels the same way; every other triangle, new,
// gone or out of order, marks its box (and its scissor's) as damaged. The rectangles are made
// disjoint, so no pixel is drawn twice, and clipped() keeps, per rectangle, every triangle that
// touches it, in order, with its scissor cut to the rectangle.
//
// What it cannot see: a draw callback's own pixels (a retained layer copied in). A callback is
// matched by its function, data and scissor like a triangle; whoever owns it adds the region
// whose content changed to `extra`. Nor does it see textures change: update(..., full = true)
// after the fonts are rebuilt. It needs DisplayPos (0, 0) and a framebuffer scale of 1
// (tracks() says whether the draw data qualifies); otherwise draw everything.
#include <cstdint>
#include <memory>
#include <vector>

#include <imgui.h>

namespace onegpu::app {

// Whole pixels, top-left origin, [x0, x1) x [y0, y1).
struct PixelBox {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool empty() const { return x1 <= x0 || y1 <= y0; }
  long area() const { return empty() ? 0 : (long)(x1 - x0) * (y1 - y0); }
};

// The pixels the OpenGL backend's scissor keeps for `clip` (ImGui units, with DisplayPos (0, 0)
// and a framebuffer scale of 1), as it computes them (truncated origin and size).
PixelBox scissor_of(const ImVec4& clip, int fb_h);

// Something the caller draws itself, under the ImGui windows (the Lab's ranks view): a hash of
// what decides its pixels and the pixels it may touch (render::DrawnItem, in window pixels).
struct DrawnBox {
  std::uint64_t hash;
  PixelBox box;
};

class FrameDamage {
 public:
  static constexpr int kMaxRects = 16;  // more are merged: each costs another pass of the triangles
  FrameDamage();
  ~FrameDamage();
  FrameDamage(const FrameDamage&) = delete;
  FrameDamage& operator=(const FrameDamage&) = delete;

  static bool tracks(const ImDrawData& dd);
  // Finds this frame's damage against the frame given to the last update(). `extra`: regions
  // that change whatever the triangles say (a retained layer's new content). `own`: what the
  // caller draws before the ImGui windows, item by item in drawing order, matched like the
  // triangles. `full`: the whole frame (the first frame, a resize, new fonts).
  void update(const ImDrawData& dd, int fb_w, int fb_h, const std::vector<PixelBox>& extra, bool full,
              const std::vector<DrawnBox>& own = {});
  // The same for the caller's own items alone (no ImGui triangles): what changed in a scene.
  void update(const std::vector<DrawnBox>& own, int fb_w, int fb_h, bool full);
  PixelBox bounds() const;  // the smallest box holding every rectangle (empty: none)
  const std::vector<PixelBox>& rects() const { return rects_; }
  long area() const;  // damaged pixels this frame
  // Whether a triangle (or callback) of the frame given to the last update() may cover a pixel
  // of `r`: a pixel to spare round each, as for the damage.
  bool reaches(const PixelBox& r) const;
  // A draw list per list of `dd`, holding for each damage rectangle the commands and triangles
  // that touch it, scissored to it. Valid until the next call.
  ImDrawData* clipped(const ImDrawData& dd) { return clipped_to(dd, rects_); }
  // The same for other disjoint rectangles (`dd` is the frame given to the last update()).
  ImDrawData* clipped_to(const ImDrawData& dd, const std::vector<PixelBox>& rects);

 private:
  using Tri = DrawnBox;  // an ImGui triangle: the pixels it may cover, inside its scissor
  void collect(const ImDrawData& dd, int fb_h, const std::vector<DrawnBox>& own);
  void merge();
  std::vector<Tri> last_, now_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> sorted_;
  std::vector<char> used_;
  std::vector<PixelBox> rects_;
  std::vector<std::uint8_t> cells_;  // merge()'s grid
  int w_ = 0, h_ = 0;
  std::vector<std::unique_ptr<ImDrawList>> lists_;
  std::vector<ImDrawList*> list_ptrs_;
  ImDrawData out_;
};

}  // namespace onegpu::app
