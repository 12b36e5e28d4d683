#pragma once
// GPU 1's share of the full-size model, as the story's last picture shows it beside the
// measured tiny share: one bar a way of holding it (no sharding, ZeRO-1, -2, -3, ZeRO-3 with
// recomputation), split by category, against the memory of an H100 and an H200, then the
// step's time and traffic. Every figure is modelled (trainer/memory/full_size.h) and says so.
//
// The panel is laid out for the sizes the canvas will draw its words at. Where they are the
// sizes its proportions ask (a large picture), each part sits at its fixed share of the area.
// Where the text rule draws them bigger (a small picture, a large text scale), the parts are
// pushed down to make room, long lines wrap to the panel's width, the bars shorten so their
// totals stay inside (or, too short, go under their names at the panel's width), the panel may
// take more of the picture's height (the caller says how much), and the step's time and
// traffic are told shorter or left to the Lab's full-size panel (which shows every figure), so
// that every word stays inside the panel.
#include <string>

#include "render/canvas.h"
#include "trainer/memory/full_size.h"

namespace onegpu::app {

struct FullSizeBars {
  static constexpr int kRows = 5;  // zero 0..3, then ZeRO-3 with recomputation
  // How much of the step's time and traffic the panel tells, from all of it down to a line
  // that says where to find it: the first that fits is drawn.
  enum class Detail { Full, Short, StepOnly, Pointer, Bare };  // Bare: no step line at all
  // Where the panel's parts sit (world units).
  struct Layout {
    render::Rect area;            // the panel's box
    Detail detail = Detail::Full;
    render::Rect bars[kRows];     // row i's bar, the whole length of the scale
    float zero_x = 0, max_x = 0;  // the scale: x of 0 bytes and of the largest row's bytes,
    double max_bytes = 1;         // which is these

    float bottom = 0;             // the y under the last line
    bool stacked = false;         // each row's words on a line over its bar (too narrow beside it)
    bool fits = true;             // every word inside the area (false: even the least detail overflows)
  };
  // The layout `draw` uses, for words at the sizes `c` draws them (its text rule). The parts
  // keep the proportions of `area`; `room` (at least `area`, the same width) is where the
  // panel may reach: its box, the parts starting from its top.
  static Layout layout(const render::Canvas& c, const render::Rect& area, const render::Rect& room,
                       const trainer::ShareFigures& f, const std::string& share);
  // The x of `bytes` on the layout's scale, whose end is the largest row's total.
  static float x_of(const Layout& l, double bytes);
  static const trainer::RankFootprint& row(const trainer::ShareFigures& f, int i);
  static std::string row_name(int i);
  // Draws the panel (as layout() places it) with opacity `alpha`; `share` names what GPU 1 holds.
  static void draw(render::Canvas& c, const render::Rect& area, const render::Rect& room, const trainer::ShareFigures& f,
                   const std::string& share, float alpha, float wpp);
};

// "437.8 GB" (10⁹ bytes, as GPUs are sold).
std::string gigabytes(double bytes);

}  // namespace onegpu::app
