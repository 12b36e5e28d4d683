#pragma once
// GPU 1's share of the full-size model, as the story's last picture shows it beside the
// measured tiny share: one bar a way of holding it (no sharding, ZeRO-1, -2, -3, ZeRO-3 with
// recomputation), split by category, against the memory of an H100 and an H200, then the
// step's time and traffic. Every figure is modelled (trainer/memory/full_size.h) and says so.
#include <string>

#include "render/canvas.h"
#include "trainer/memory/full_size.h"

namespace onegpu::app {

struct FullSizeBars {
  static constexpr int kRows = 5;  // zero 0..3, then ZeRO-3 with recomputation
  // Where row i's bar sits inside `area` (world units), and the x of `bytes` on the scale.
  static render::Rect bar(const render::Rect& area, int row);
  static float x_of(const render::Rect& area, double bytes, double max_bytes);
  static const trainer::RankFootprint& row(const trainer::ShareFigures& f, int i);
  static std::string row_name(int i);
  // Draws the panel in `area` with opacity `alpha`; `share` names what GPU 1 holds.
  static void draw(render::Canvas& c, const render::Rect& area, const trainer::ShareFigures& f, const std::string& share,
                   float alpha, float wpp);
};

// "437.8 GB" (10⁹ bytes, as GPUs are sold).
std::string gigabytes(double bytes);

}  // namespace onegpu::app
