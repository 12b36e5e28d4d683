#pragma once
// The one size rule for text inside the pictures (chapters and the Lab's drawings): no label is
// drawn smaller on screen than min_label_px(), which grows with the window and with the
// presenter's text size (Ctrl+= / --ui-scale). Scenes still choose their sizes in world units;
// the canvas raises any that would come out smaller (see Canvas::set_view).
//
// Sizes are em heights in pixels (the font size), not the height of a capital letter.
#include <algorithm>

namespace onegpu::render {

// A label's em is at least this many pixels (points on a HiDPI screen) at text scale 1, however
// small the window.
inline constexpr float kMinLabelFloorPx = 13.0f;
// ... and at least this share of the window's height, so a projected 1080p picture keeps the
// proportions of a 900p one (15 px at 900, 18 px at 1080).
inline constexpr float kMinLabelShare = 1.0f / 60.0f;
// The presenter's larger text raises the minimum with it, but only up to this share of the
// picture's own height: the pictures are laid out for about 1/47 at text scale 1, and past
// 1/36 their labels would cover each other and the things they name.
inline constexpr float kMaxLabelShareOfPicture = 1.0f / 36.0f;

// window_h: the window's height in framebuffer pixels; picture_h: the picture's (the scene
// viewport's). text_scale: the panels' scale (Ctrl+=, --ui-scale). pixel_density: framebuffer
// pixels per screen point (2 on a HiDPI monitor, where text_scale starts at 2 too): the floor
// is in points, and only the presenter's own enlarging (text_scale / pixel_density) raises it.
inline float min_label_px(float window_h, float picture_h, float text_scale, float pixel_density = 1.0f) {
  const float density = std::max(pixel_density, 0.1f);
  const float base = std::max(kMinLabelFloorPx * density, kMinLabelShare * window_h);
  const float enlarged = base * std::max(text_scale / density, 0.1f);
  return std::max(std::min(base, enlarged), std::min(enlarged, kMaxLabelShareOfPicture * picture_h));
}

// From one baseline to the next, for a line drawn at em `above` over one drawn at em `below`
// (sizes as drawn, after the rule): the upper line's descent and the lower one's ascent, with a
// little air. Scenes that stack lines of different sizes space them by it.
inline float line_pitch(float above, float below) { return 0.3f * above + 1.05f * below; }

}  // namespace onegpu::render
