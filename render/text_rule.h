#pragma once
// The one size rule for text inside the pictures (chapters and the Lab's drawings): no label is
// drawn smaller on screen than min_label_px(), which grows with the window and with the
// presenter's text size (Ctrl+= / --ui-scale). Scenes still choose their sizes in world units;
// the canvas raises any that would come out smaller (see Canvas::set_view).
//
// Sizes are em heights in pixels (the font size), not the height of a capital letter.
#include <algorithm>

namespace onegpu::render {

// A label's em is at least this many pixels at text scale 1, however small the window.
inline constexpr float kMinLabelFloorPx = 13.0f;
// ... and at least this share of the window's height, so a projected 1080p picture keeps the
// proportions of a 900p one (15 px at 900, 18 px at 1080).
inline constexpr float kMinLabelShare = 1.0f / 60.0f;

// window_h: the window's height in framebuffer pixels. text_scale: the panels' scale (Ctrl+=,
// --ui-scale). pixel_density: framebuffer pixels per screen point (2 on a HiDPI monitor, where
// text_scale starts at 2 too): the floor is in points, and only the presenter's own enlarging
// (text_scale / pixel_density) multiplies the result.
inline float min_label_px(float window_h, float text_scale, float pixel_density = 1.0f) {
  const float density = std::max(pixel_density, 0.1f);
  return std::max(kMinLabelFloorPx * density, kMinLabelShare * window_h) * std::max(text_scale / density, 0.1f);
}

}  // namespace onegpu::render
