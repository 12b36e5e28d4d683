// The charts' line (app/lab/column_line.h): thousands of steps in a narrow chart keep a few
// points a pixel column, the column's highest and lowest among them, and the last value.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "app/lab/column_line.h"

namespace onegpu::app {
namespace {

struct Pt {
  float x, y;
};

TEST(ColumnLine, ThousandsOfStepsKeepAFewPointsAColumnAndTheLastValue) {
  // 3,000 steps over 240 pixels, each step a third of a pixel or less to the right.
  ColumnLine<Pt> line;
  const int n = 3000;
  for (int i = 0; i < n; ++i) line.add({240.0f * (float)i / (float)(n - 1), 100.0f - 0.01f * (float)i});
  const std::vector<Pt>& pts = line.points();
  EXPECT_GE(pts.size(), 240u) << "a point in every column crossed, not one for the whole line";
  EXPECT_LE(pts.size(), 4u * 241u) << "no more than four a column";
  EXPECT_FLOAT_EQ(pts.front().y, 100.0f) << "the line starts on the first step";
  EXPECT_FLOAT_EQ(pts.back().y, 100.0f - 0.01f * (n - 1)) << "and ends on the last";
  for (std::size_t i = 1; i < pts.size(); ++i) EXPECT_LE(pts[i - 1].x, pts[i].x) << "left to right, point " << i;
}

TEST(ColumnLine, ASpikeOneStepWideStillReachesItsHeight) {
  ColumnLine<Pt> line;
  for (int i = 0; i < 1000; ++i) line.add({0.05f * (float)i, i == 517 ? 9.0f : 1.0f});
  const std::vector<Pt>& pts = line.points();
  EXPECT_NE(std::find_if(pts.begin(), pts.end(), [](Pt p) { return p.y == 9.0f; }), pts.end());
  EXPECT_FLOAT_EQ(pts.back().y, 1.0f);
}

TEST(ColumnLine, StepsWiderThanAPixelAreAllKept) {
  ColumnLine<Pt> line;
  for (int i = 0; i < 5; ++i) line.add({3.0f * (float)i, (float)i});
  const std::vector<Pt>& pts = line.points();
  ASSERT_EQ(pts.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(pts[(std::size_t)i].y, (float)i);
}

}  // namespace
}  // namespace onegpu::app
