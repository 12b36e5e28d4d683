#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "render/shape_batch.h"
#include "render/shape_programs.h"

using namespace onegpu::render;

namespace {
// A batch spelled one letter a shape: b box, h hatched box, r ring, s segment, g glow, each 4x4
// pixels with the margin at a world unit a pixel; B a box of 162x162 pixels.
std::vector<ShapeInstance> batch(const std::string& kinds) {
  std::vector<ShapeInstance> v;
  for (char k : kinds) {
    ShapeInstance s{};
    s.geom = {0.0f, 0.0f, 1.0f, 1.0f};  // 2x2 world units (4x4 pixels with the margin, at wpp 1)
    s.params.z = k == 'r' ? 1.0f : k == 's' ? 2.0f : k == 'g' ? 3.0f : 0.0f;
    if (k == 'B') s.geom = {0.0f, 0.0f, 80.0f, 80.0f};
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
    const char name = r.variant == ShapeVariant::General ? 'G' : "brsgh"[static_cast<int>(r.variant)];  // B is b
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

TEST(ShapeRuns, RunsOfManyPixelsKeepTheirOwnProgram) {
  const std::size_t n = static_cast<std::size_t>(kShortRunPx / 16);  // 16 pixels a shape
  const std::string boxes(n, 'b'), rings(n, 'r'), k = std::to_string(n);
  EXPECT_EQ(plan(boxes + rings + boxes), "b:" + k + " r:" + k + " b:" + k);
  EXPECT_EQ(plan("BrB"), "b:1 r:1 b:1");  // one short run between big ones: merging saves no call
  // A big shape among small ones of other kinds: shading it generally would cost more than a call.
  EXPECT_EQ(plan("bsBsb"), "G:2 b:1 G:2");
}

TEST(ShapeRuns, ShortRunsInARowShareTheGeneralProgram) {
  EXPECT_EQ(plan("bsbsbs"), "G:6");
  EXPECT_EQ(plan("BsrghB"), "b:1 G:4 b:1");
  // A field's flashing chips: a glow, then eight small boxes, again and again.
  std::string chips;
  for (int i = 0; i < 100; ++i) chips += "gbbbbbbbb";
  EXPECT_EQ(plan(chips), "G:900");
  EXPECT_EQ(plan("gbbbB"), "g:1 b:4");
  EXPECT_EQ(plan("bsgrrBs"), "G:5 b:1 s:1");
}

TEST(ShapeRuns, SmallerOnScreenWhenZoomedOut) {
  // The same big box a hundredth the size on screen: one general run.
  EXPECT_EQ(plan("bsBsb"), "G:2 b:1 G:2");
  const auto items = batch("bsBsb");
  std::vector<ShapeRun> runs;
  plan_shape_runs(items.data(), items.size(), 100.0f, runs);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].variant, ShapeVariant::General);
  EXPECT_EQ(runs[0].count, 5u);
}

TEST(ShapeRuns, BigShapesOfKindsThatAlternateStillMakeAFewCalls) {
  // A zoomed-in field of flashing chips: a big glow, then a big box, 512 times.
  std::string chips;
  for (int i = 0; i < 512; ++i) chips += "gB";
  auto items = batch(chips);
  for (auto& s : items) s.geom = {0.0f, 0.0f, 80.0f, 80.0f};
  std::vector<ShapeRun> runs;
  plan_shape_runs(items.data(), items.size(), 1.0f, runs);
  EXPECT_LE(runs.size(), kMaxRuns);
  std::size_t next = 0;
  for (const ShapeRun& r : runs) {
    EXPECT_EQ(r.first, next);
    next = r.first + r.count;
  }
  EXPECT_EQ(next, items.size());
}
