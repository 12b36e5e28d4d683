// Where wrapped lines may break (render/text_breaks.h): never between a number and its unit.
#include <gtest/gtest.h>

#include "render/text_breaks.h"

namespace onegpu::render {
namespace {

TEST(TextBreaks, ANumberKeepsItsUnit) {
  EXPECT_TRUE(keeps_with_next("32.4", "GB"));
  EXPECT_TRUE(keeps_with_next("0.65", "s"));
  EXPECT_TRUE(keeps_with_next("0.65", "s)"));  // closing punctuation after the unit
  EXPECT_TRUE(keeps_with_next("1,479", "MB,"));
  EXPECT_TRUE(keeps_with_next("61,625", "tokens/s"));
  EXPECT_TRUE(keeps_with_next("12", "%"));
  EXPECT_TRUE(keeps_with_next("220", "µs"));
}

TEST(TextBreaks, OtherSpacesStillBreak) {
  EXPECT_FALSE(keeps_with_next("GB", "over"));      // a unit and the next word
  EXPECT_FALSE(keeps_with_next("32.4", "experts"));  // a number and a word that is no unit
  EXPECT_FALSE(keeps_with_next("step", "s"));        // "s" after a word is no unit
  EXPECT_FALSE(keeps_with_next("", "GB"));
  EXPECT_FALSE(keeps_with_next("32.4", ""));
  EXPECT_FALSE(keeps_with_next("4", "Stage"));
}

}  // namespace
}  // namespace onegpu::render
