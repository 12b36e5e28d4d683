#pragma once
// What scenes draw on: shapes and text in layers, flushed in order, each layer costing at most
// two draw calls (its shapes, then its text) however much it holds.
//
// Text follows one size rule (render/text_rule.h). Once a frame, set_view() tells the canvas
// what is on screen and how small a label may be; then
//   - no label is drawn under the minimum: text() and text_in() raise smaller sizes to it;
//   - a label whose anchor is on screen stays whole on screen: one that would run off an edge
//     is moved in, and one wider than the view shrinks (not under the minimum) and then wraps;
//   - text_in() fits a label to a box the scene gives (shrink, then wrap), and text_fits() says
//     beforehand whether it can, so a label that cannot be read there is left out, not squeezed;
//   - every label drawn goes to the LabelLog with its size and box.
// Without set_view() (min_px 0, no log) text is drawn as asked, as before.
//
// A caller that redraws a kept frame only where it changed (the Lab) asks, between drawing and
// flushing, what will be drawn: prepare(), then drawn() lists each shape and glyph with a hash
// of what it is and the pixels it may touch; flush(..., clips) then draws only inside the boxes.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <numbers>
#include <string>
#include <string_view>
#include <vector>

#include "render/camera.h"
#include "render/label_log.h"
#include "render/sdf_font.h"
#include "render/shape_batch.h"

namespace onegpu::render {

// One shape or glyph a flush will draw: a hash of everything that decides its pixels (the
// instance, its layer, the camera) and the viewport pixels it may touch (x0, y0, x1, y1 from
// the top-left, a pixel to spare). Equal hashes drawn in the same order give equal pixels.
struct DrawnItem {
  std::uint64_t hash;
  glm::ivec4 box;
};

// Pixels a label keeps from the view's edges when text() moves it in.
inline constexpr float kTextMargin = 4.0f;

// What is on screen this frame, for the text rule.
struct TextView {
  Rect visible;              // the canvas units shown (world rect, or the viewport's pixels)
  float world_per_px = 1.0f;
  float min_px = 0.0f;       // the rule's minimum em, pixels; 0: no rule
  LabelLog* log = nullptr;   // where drawn labels are recorded (may be null)
};

class Canvas {
 public:
  static constexpr int kLayers = 4;
  Canvas(const ShapePrograms* shapes, const Shader* text, const SdfFont* font);

  void set_layer(int i) { layer_ = i < 0 ? 0 : i >= kLayers ? kLayers - 1 : i; }
  int layer() const { return layer_; }

  // Sizes and positions in world units.
  void box(const Rect& r, glm::vec4 fill, float radius = 0.0f, glm::vec4 stroke = {}, float stroke_w = 0.0f);
  void hatched(const Rect& r, glm::vec4 bg, glm::vec4 lines, float spacing, float line_w,
               float radius = 0.0f, glm::vec4 stroke = {}, float stroke_w = 0.0f);
  void glow(const Rect& r, glm::vec4 color, float radius, float spread);
  void ring(glm::vec2 c, float radius, float thickness, glm::vec4 color, float start = 0.0f,
            float sweep = 2.0f * std::numbers::pi_v<float>);
  void disc(glm::vec2 c, float radius, glm::vec4 color);
  void line(glm::vec2 a, glm::vec2 b, float width, glm::vec4 color);
  // A translucent box of the ground's colour (what the frame was cleared to) over `r`, dimming
  // what this canvas drew before it there (its shapes in this layer and the ones under, their
  // text in the layers under). Over the bare ground it would change no pixel (the colour over the
  // same colour), so it is drawn only where something lies under it: as boxes round those
  // shapes and glyphs (a pixel to spare, inside `r`), merged until they are disjoint. A shape
  // wholly inside `r` that the veil dims to under half a level of 255 in every channel is left
  // out (a faded picture behind a near-opaque veil). On llvmpipe a veil over a whole picture is a
  // million pixels shaded; most of it lay over nothing. Needs set_view (else one box over `r`).
  void veil(const Rect& r, glm::vec4 ground, float alpha);
  // Returns the width drawn (the widest line when it had to wrap).
  float text(std::string_view s, glm::vec2 baseline, float size, glm::vec4 color, Align a = Align::Left);
  // Fits the label inside `area` (centred vertically, aligned by `a`): smaller when it is too big
  // for the box, never under the minimum, wrapped when one line cannot fit. Returns the width.
  float text_in(std::string_view s, const Rect& area, float size, glm::vec4 color, Align a = Align::Left);
  // A paragraph: `s` wrapped to `width` from its first line's top-left corner down (at the size
  // after the rule). Returns the y of its bottom, where the next one can start.
  float paragraph(std::string_view s, glm::vec2 top_left, float width, float size, glm::vec4 color);
  // The height paragraph() would take.
  float paragraph_height(std::string_view s, float width, float size) const;
  // Whether text_in() can fit the label in `area` without breaking the rule.
  bool text_fits(std::string_view s, const Rect& area) const;
  // Width `s` will take at `size`, after the rule (one line).
  float text_width(std::string_view s, float size) const { return font_->measure(s) * text_size(size); }
  // The size a label asked at `size` is drawn at: never under the minimum.
  float text_size(float size) const { return size < min_text_ ? min_text_ : size; }
  float min_text() const { return min_text_; }  // the minimum em, canvas units
  // The rightmost x a label may reach: the view's right edge less the margin text() keeps
  // (meaningful only after set_view: check view().visible first).
  float text_right() const { return view_.visible.max.x - kTextMargin * view_.world_per_px; }
  // Whether `s` at `size`, drawn from x rightwards, ends by text_right() (true before a view
  // is set: there is no edge to measure against).
  bool fits_right(std::string_view s, float x, float size) const {
    return view_.visible.size().x <= 0.0f || x + text_width(s, size) <= text_right();
  }
  // The first of `told` that fits from x (fits_right), else the last: a label told shorter
  // where the whole would run past the picture's edge and be moved in over something else.
  std::string_view first_fitting(std::initializer_list<std::string_view> told, float x, float size) const {
    for (std::string_view t : told)
      if (fits_right(t, x, size)) return t;
    return *(told.end() - 1);
  }
  // The baseline that centres a line drawn at `size` (after the rule) on height y.
  float baseline_centred(float y, float size) const { return y - 0.5f * (font_->ascent() - font_->descent()) * size; }
  void set_view(const TextView& v);
  const TextView& view() const { return view_; }
  const SdfFont& font() const { return *font_; }

  // Draws every layer under `cam`, leaving out what would not change a pixel: shapes and
  // glyphs wholly outside the view, shapes with nothing but transparent colours, and shapes and
  // glyphs wholly under the opaque inside of a box drawn after them (a panel over a faded
  // picture). Counted in stats.left_out. A big shape partly under such a box is shaded only
  // round it: its quad cut into the parts outside (ShapeInstance::part), each shading the same
  // pixels it did, so that a faint layer the size of the picture under a panel does not shade
  // the panel's pixels too.
  // `clips`: draw only inside these scissor boxes (ShapeBatch::flush).
  void flush(const Camera& cam, DrawStats& stats, const std::vector<glm::ivec4>* clips = nullptr);
  // Leaves out now what flush() would (so drawn() lists only what will be drawn); the next
  // flush() does not do it again.
  void prepare(const Camera& cam, DrawStats& stats);
  // Drops everything added since the last flush, drawing nothing.
  void clear_items();
  // Appends what the next flush under `cam` draws, in drawing order (after prepare()).
  void drawn(const Camera& cam, std::vector<DrawnItem>& out) const;
  std::size_t shape_count() const;

 private:
  struct Layer {
    std::unique_ptr<ShapeBatch> shapes;
    std::unique_ptr<TextBatch> text;
  };
  ShapeBatch& shapes() { return *layers_[layer_].shapes; }
  // Greedy word wrap of `s` at `size` into lines no wider than `width` (a longer word keeps
  // its own line).
  std::vector<std::string> wrap(std::string_view s, float size, float width) const;
  // Draws `lines` from the first baseline down, and logs them as one label (moved: how far
  // text() moved them in from an edge, world units).
  float draw_lines(const std::vector<std::string>& lines, glm::vec2 baseline, float size, glm::vec4 color,
                   Align a, const Rect& area, bool in_view, float moved = 0.0f);
  float line_gap(float size) const { return 1.2f * size; }
  void leave_out_unseen(const Camera& cam, DrawStats& stats);
  struct Cover {  // the opaque inside of a box (opaque_interior), hiding what was drawn before it
    int layer;
    std::size_t index;
    Rect inside;
  };
  std::vector<Cover> covers_;  // kept between frames: no allocation a frame
  std::vector<Rect> pieces_;   // veil(): kept between frames
  std::vector<ShapeInstance> kept_;  // leave_out_unseen(): a layer's shapes after, kept between frames
  bool prepared_ = false;      // prepare() ran since the last flush
  const SdfFont* font_;
  TextView view_;
  float min_text_ = 0.0f;
  std::array<Layer, kLayers> layers_;
  int layer_ = 0;
};

}  // namespace onegpu::render
