#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "render/shape_batch.h"
#include "render/shape_programs.h"

using namespace onegpu::render;

namespace {
// A batch spelled one letter a shape: b box, h hatched box, r ring, s segment, g glow.
std::vector<ShapeInstance> batch(const std::string& kinds) {
  std::vector<ShapeInstance> v;
  for (char k : kinds) {
    ShapeInstance s{};
    s.geom = {0.0f, 0.0f, 1.0f, 1.0f};  // 2x2 world units (4x4 pixels with the margin, at wpp 1)
    s.params.z = k == 'r' ? 1.0f : k == 's' ? 2.0f : k == 'g' ? 3.0f : 0.0f;
    if (k == 'h') s.extra.x = 0.2f;  // hatch spacing
    v.push_back(s);
  }
  return v;
}
// The runs as "variant:count" (G for the general program).
std::string plan(const std::string& kinds) {
  const auto items = batch(kinds);
  std::vector<ShapeRun> runs;
  plan_shape_runs(items.data(), items.size(), 1.0f, runs);
  std::string out;
  std::size_t next = 0;
  for (const ShapeRun& r : runs) {
    EXPECT_EQ(r.first, next);  // consecutive, in drawing order, nothing left out
    EXPECT_GT(r.count, 0u);
    next = r.first + r.count;
    const char name = r.variant == ShapeVariant::General ? 'G' : "brsgh"[static_cast<int>(r.variant)];
    out += (out.empty() ? "" : " ") + std::string(1, name) + ":" + std::to_string(r.count);
  }
  EXPECT_EQ(next, items.size());
  return out;
}
}  // namespace

TEST(ShapeRuns, EachInstanceGoesToTheProgramOfItsKind) {
  EXPECT_EQ(variant_of(batch("b")[0]), ShapeVariant::Box);
  EXPECT_EQ(variant_of(batch("h")[0]), ShapeVariant::HatchedBox);
  EXPECT_EQ(variant_of(batch("r")[0]), ShapeVariant::Ring);
  EXPECT_EQ(variant_of(batch("s")[0]), ShapeVariant::Segment);
  EXPECT_EQ(variant_of(batch("g")[0]), ShapeVariant::Glow);
}

TEST(ShapeRuns, OneKindIsOneRunHoweverLong) {
  EXPECT_EQ(plan(""), "");
  EXPECT_EQ(plan("b"), "b:1");
  EXPECT_EQ(plan(std::string(5000, 'b')), "b:5000");
}

TEST(ShapeRuns, LongRunsKeepTheirOwnProgram) {
  const std::string boxes(kShortRun, 'b'), rings(kShortRun, 'r');
  EXPECT_EQ(plan(boxes + rings + boxes), "b:8 r:8 b:8");
  // One short run between long ones keeps its own program too: merging it would save no call.
  EXPECT_EQ(plan(boxes + "s" + boxes), "b:8 s:1 b:8");
}

TEST(ShapeRuns, ShortRunsInARowShareTheGeneralProgram) {
  const std::string boxes(kShortRun, 'b');
  EXPECT_EQ(plan("bsbsbs"), "G:6");
  EXPECT_EQ(plan(boxes + "srgh" + boxes), "b:8 G:4 b:8");
  EXPECT_EQ(plan("gbbb" + boxes), "g:1 b:11");
  EXPECT_EQ(plan("bsgrr" + boxes + "s"), "G:5 b:8 s:1");
}

TEST(ShapeRuns, ABigShapeKeepsItsOwnProgram) {
  // A few shapes covering many pixels: shading them generally would cost more than a draw call.
  auto items = batch("bsbsb");
  items[2].geom = {0.0f, 0.0f, 40.0f, 40.0f};  // 82x82 pixels with the margin
  std::vector<ShapeRun> runs;
  plan_shape_runs(items.data(), items.size(), 1.0f, runs);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].variant, ShapeVariant::General);
  EXPECT_EQ(runs[0].count, 2u);
  EXPECT_EQ(runs[1].variant, ShapeVariant::Box);
  EXPECT_EQ(runs[1].count, 1u);
  EXPECT_EQ(runs[2].variant, ShapeVariant::General);
  EXPECT_EQ(runs[2].count, 2u);
  // Far out (a pixel is 100 world units) the same box is small: one general run.
  plan_shape_runs(items.data(), items.size(), 100.0f, runs);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].variant, ShapeVariant::General);
}
