#include "render/shape_programs.h"

#include <string>

#include "render/gl.h"
#include "render/shape_batch.h"

namespace onegpu::render {

ShapeVariant variant_of(const ShapeInstance& s) {
  // As shape.frag and shape.vert read the kind and the hatching.
  const int kind = static_cast<int>(s.params.z + 0.5f);
  if (kind == 0 && s.extra.x > 0.0f) return ShapeVariant::HatchedBox;
  if (kind >= 1 && kind <= 3) return static_cast<ShapeVariant>(kind);
  return ShapeVariant::Box;  // the shaders' "else": any other kind is drawn as a box
}

namespace {
void plan_runs(const ShapeInstance* items, std::size_t n, float wpp, float short_px, std::vector<ShapeRun>& runs) {
  runs.clear();
  const float short_area = short_px * wpp * wpp;
  bool last_short = false;
  std::size_t i = 0;
  while (i < n) {
    const ShapeVariant v = variant_of(items[i]);
    std::size_t j = i;
    float area = 0.0f;
    for (; j < n && variant_of(items[j]) == v; ++j) {
      if (area >= short_area) continue;  // big enough already
      const glm::vec2 size = shape_bounds(items[j], wpp).size();
      area += size.x * size.y;
    }
    const ShapeRun run{i, j - i, v};
    i = j;
    const bool short_run = area < short_area;
    const bool join = short_run && last_short;
    last_short = short_run;
    if (join) {  // joins the general run before it, or makes one with the short run before it
      runs.back().variant = ShapeVariant::General;
      runs.back().count += run.count;
    } else {
      runs.push_back(run);
    }
  }
}
}  // namespace

void plan_shape_runs(const ShapeInstance* items, std::size_t n, float wpp, std::vector<ShapeRun>& runs) {
  float short_px = kShortRunPx;
  plan_runs(items, n, wpp, short_px, runs);
  // Each round makes every run that was short still short, and more: it ends (at worst every
  // shape's area is under the limit, and the whole batch is one general run).
  while (runs.size() > kMaxRuns) plan_runs(items, n, wpp, short_px *= 4.0f, runs);
}

ShapePrograms::ShapePrograms(const std::filesystem::path& dir) {
  for (int v = -1; v < kShapeVariants; ++v) {
    Program& p = programs_[v + 1];
    p.shader = Shader(dir / "shape.vert", dir / "shape.frag", "#define SHAPE_VARIANT " + std::to_string(v) + "\n");
    p.vp = p.shader.uniform("u_vp");
    p.wpp = p.shader.uniform("u_wpp");
  }
}

void ShapePrograms::use(ShapeVariant v, const float* view_projection, float world_per_px) const {
  const Program& p = program(v);
  p.shader.use();
  glUniformMatrix4fv(p.vp, 1, GL_FALSE, view_projection);
  glUniform1f(p.wpp, world_per_px);
}

}  // namespace onegpu::render
