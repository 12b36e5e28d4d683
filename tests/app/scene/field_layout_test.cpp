#include <gtest/gtest.h>

#include <set>

#include "app/scene/field_layout.h"

using namespace onegpu::app;

TEST(FieldLayout, FiveHundredTwelveCellsInEightBlocksOfSixtyFour) {
  FieldLayout f(512);
  ASSERT_EQ(f.size(), 512);
  EXPECT_EQ(f.block_columns(), 4);
  EXPECT_EQ(f.block_rows(), 2);
  std::set<int> replicas;
  for (const auto& c : f.cells()) {
    replicas.insert(c.replica);
    EXPECT_GE(c.stage, 0);
    EXPECT_LT(c.stage, 8);
    EXPECT_GE(c.column, 0);
    EXPECT_LT(c.column, 8);
  }
  EXPECT_EQ(replicas.size(), 8u);
}

TEST(FieldLayout, ChipsNeverOverlapAndStayInBounds) {
  FieldLayout f(512);
  for (const auto& a : f.cells()) {
    auto r = f.chip_rect(a.gpu);
    EXPECT_TRUE(f.bounds().contains(r.min));
    EXPECT_TRUE(f.bounds().contains(r.max));
  }
  // Nearest neighbours are one pitch apart; chips are smaller than the pitch.
  for (int i = 0; i < f.size(); ++i)
    for (int j = i + 1; j < f.size(); ++j) {
      glm::vec2 d = glm::abs(f.cell(i).center - f.cell(j).center);
      EXPECT_TRUE(d.x >= FieldLayout::kPitch - 1e-4f || d.y >= FieldLayout::kPitch - 1e-4f) << i << " " << j;
    }
  EXPECT_LT(FieldLayout::kChip, FieldLayout::kPitch);
}

TEST(FieldLayout, GpuOneIsStageOneOfTheFirstBlockAtTheLeftEdge) {
  FieldLayout f(512);
  const auto& g1 = f.cell(0);
  EXPECT_EQ(g1.replica, 0);
  EXPECT_EQ(g1.stage, 0);   // bottom row of its block: stage 1
  EXPECT_EQ(g1.column, 0);  // first GPU of its machine
  // Leftmost column of the field, in the upper row of blocks.
  for (const auto& c : f.cells()) EXPECT_GE(c.center.x, g1.center.x - 1e-4f);
  EXPECT_GT(g1.center.y, f.bounds().center().y);
  // The eight GPUs of stage 1 in block 0 sit in one row, to GPU 1's right.
  for (int k = 1; k < 8; ++k) {
    EXPECT_FLOAT_EQ(f.cell(k).center.y, g1.center.y);
    EXPECT_FLOAT_EQ(f.cell(k).center.x, g1.center.x + k * FieldLayout::kPitch);
  }
  // Stage 2 sits right above stage 1.
  EXPECT_FLOAT_EQ(f.cell(8).center.y, g1.center.y + FieldLayout::kPitch);
}

TEST(FieldLayout, PointLookupInvertsTheLayout) {
  FieldLayout f(512);
  for (const auto& c : f.cells()) EXPECT_EQ(f.gpu_at(c.center), c.gpu);
  EXPECT_EQ(f.gpu_at({-5.0f, -5.0f}), -1);
  // Between two chips: no GPU.
  glm::vec2 gap = (f.cell(0).center + f.cell(1).center) * 0.5f;
  EXPECT_EQ(f.gpu_at(gap), -1);
}

TEST(FieldLayout, LargerFieldsForTheBenchmark) {
  for (int n : {4096, 32768}) {
    FieldLayout f(n);
    EXPECT_EQ(f.size(), n);
    for (int g : {0, n / 3, n - 1}) EXPECT_EQ(f.gpu_at(f.cell(g).center), g);
    EXPECT_GT(f.bounds().size().x, f.bounds().size().y);  // wider than tall
  }
  EXPECT_THROW(FieldLayout(100), std::invalid_argument);
  EXPECT_THROW(FieldLayout(0), std::invalid_argument);
}
