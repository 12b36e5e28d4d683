#include <gtest/gtest.h>

#include "render/sdf_font.h"

using onegpu::render::decode_utf8;

TEST(Utf8, DecodesOneToFourByteSequences) {
  EXPECT_EQ(decode_utf8("a"), U"a");
  EXPECT_EQ(decode_utf8("é"), U"é");
  EXPECT_EQ(decode_utf8("→"), U"→");
  EXPECT_EQ(decode_utf8("😀"), U"😀");
  EXPECT_EQ(decode_utf8("GPU · 1"), U"GPU · 1");
}

TEST(Utf8, BadBytesBecomeReplacementCharacters) {
  EXPECT_EQ(decode_utf8(std::string("\xff", 1)), U"\uFFFD");
  EXPECT_EQ(decode_utf8(std::string("a\xe2\x86", 3)), U"a\uFFFD\uFFFD");  // truncated arrow
  EXPECT_EQ(decode_utf8(std::string("\xc3(", 2)), U"\uFFFD(");
  EXPECT_EQ(decode_utf8(""), U"");
}
