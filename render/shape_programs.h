#pragma once
// The programs that draw shapes, and which of them draws which run of a batch.
//
// llvmpipe (the software rasteriser the story is measured on) runs every branch of a shader for
// every pixel, so one program for every kind of shape shades a box's pixels with the ring's,
// the segment's, the glow's and the hatching's arithmetic too. Each variant here is shape.frag
// with the kind fixed (SHAPE_VARIANT), so it shades only its own; the general program (every
// kind, picked per instance) draws stretches where kinds alternate too often for a draw call
// per kind to pay. Drawing order is kept: a batch is cut into runs, never reordered, and every
// program gives the same pixels for the same shape.
#include <array>
#include <cstddef>
#include <filesystem>
#include <vector>

#include "render/shader.h"

namespace onegpu::render {

struct ShapeInstance;

enum class ShapeVariant : int { General = -1, Box = 0, Ring = 1, Segment = 2, Glow = 3, HatchedBox = 4 };
constexpr int kShapeVariants = 5;  // not counting General

// The variant that draws `s` (never General).
ShapeVariant variant_of(const ShapeInstance& s);

struct ShapeRun {
  std::size_t first = 0, count = 0;
  ShapeVariant variant = ShapeVariant::General;
};
// A run of one variant covering fewer pixels than this (its shapes' quads summed), next to
// another such run, goes to the general program with its short neighbours: a draw call costs
// more than shading a few small shapes generally (a field's flashing chips: a glow, then eight
// small boxes, 512 times), but less than shading a big box or thousands of small ones generally.
constexpr float kShortRunPx = 128.0f * 128.0f;
// At most this many runs (draw calls) a batch: where big shapes of different kinds alternate
// more often than that, the short-run size grows until they fit.
constexpr std::size_t kMaxRuns = 16;
// Cuts items[0, n) into consecutive runs covering all of them in order (into `runs`, cleared
// first): runs of one variant, except that two or more short runs in a row become one General
// run; no more than kMaxRuns. `wpp`: world units per pixel, for the shapes' areas.
void plan_shape_runs(const ShapeInstance* items, std::size_t n, float wpp, std::vector<ShapeRun>& runs);

class ShapePrograms {
 public:
  // Throws render::Error as Shader does.
  explicit ShapePrograms(const std::filesystem::path& shader_dir);
  // Binds the program for `v` and sets its camera uniforms.
  void use(ShapeVariant v, const float* view_projection, float world_per_px) const;

 private:
  struct Program {
    Shader shader;
    int vp = -1, wpp = -1;
  };
  const Program& program(ShapeVariant v) const { return programs_[static_cast<int>(v) + 1]; }
  std::array<Program, kShapeVariants + 1> programs_;  // General first
};

}  // namespace onegpu::render
