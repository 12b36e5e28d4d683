// trainer/io/text: one strict rule for every integer and number read from a user or a file.
#include "trainer/io/text.h"

#include <gtest/gtest.h>

#include <climits>

#include "trainer/error.h"

using namespace onegpu::trainer;

TEST(Text, IntegersAreDigitsOnlyAndNeverWrap) {
  EXPECT_EQ(text::parse_int("5", 0, 10), 5);
  EXPECT_EQ(text::parse_int("-3", -10, 10), -3);
  EXPECT_EQ(text::parse_int("9223372036854775807", 0, LLONG_MAX), LLONG_MAX);
  EXPECT_EQ(text::parse_int("-9223372036854775808", LLONG_MIN, 0), LLONG_MIN);
  for (const char* bad : {"", " 5", "5 ", "+5", "0x5", "5.0", "1e3", "-", "--5", "2abc", "64x", "9223372036854775808",
                          "99999999999999999999999"})
    EXPECT_FALSE(text::parse_int(bad, LLONG_MIN, LLONG_MAX)) << bad;
  // Range is checked on the full value: 2^32 + 1 is not 1, 2^32 + 4 is not 4.
  EXPECT_FALSE(text::parse_int("4294967297", 1, INT_MAX));
  EXPECT_FALSE(text::parse_int("4294967300", 1, INT_MAX));
  EXPECT_EQ(text::parse_u64("18446744073709551615"), 18446744073709551615ull);
  EXPECT_FALSE(text::parse_u64("18446744073709551616"));
  EXPECT_FALSE(text::parse_u64("-1"));
}

TEST(Text, FlagMessagesNameTheFlagAndTheRange) {
  auto msg = [](const char* v) {
    try {
      text::int_flag("--steps", v, 1, 1000000000);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(msg("3000000000"), "--steps must be between 1 and 1000000000, got 3000000000");
  EXPECT_EQ(msg("0"), "--steps must be between 1 and 1000000000, got 0");
  EXPECT_EQ(msg(" 5"), "--steps expects a whole number (digits only), got ' 5'");
  EXPECT_EQ(msg("+5"), "--steps expects a whole number (digits only), got '+5'");
  EXPECT_EQ(msg(""), "--steps needs a value, got an empty one");
  EXPECT_EQ(msg("\x1b[2J"), "--steps expects a whole number (digits only), got '\\x1b[2J'");
  EXPECT_EQ(text::int_flag("--steps", "7", 1, 9), 7);
}

TEST(Text, NumbersAreFiniteAndWhole) {
  EXPECT_DOUBLE_EQ(*text::parse_number("1e308"), 1e308);
  EXPECT_DOUBLE_EQ(*text::parse_number("-0.5"), -0.5);
  EXPECT_DOUBLE_EQ(*text::parse_number(".5"), 0.5);
  EXPECT_TRUE(text::parse_number("1e-320"));  // subnormal: a number, not an error
  for (const char* bad : {"", "1e999", "nan", "inf", "-inf", " 1", "1 ", "+1", "1x", "0x10", "later"})
    EXPECT_FALSE(text::parse_number(bad)) << bad;
}

TEST(Text, PrintableEscapesTerminalControl) {
  EXPECT_EQ(text::printable("story"), "story");
  EXPECT_EQ(text::printable("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
  EXPECT_EQ(text::printable("a\nb\"c\\"), "a\\nb\\\"c\\\\");
  EXPECT_EQ(text::printable(std::string("\0\x7f", 2)), "\\x00\\x7f");
  EXPECT_EQ(text::printable("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 unchanged
}

TEST(Text, EditDistance) {
  EXPECT_EQ(text::edit_distance("trian", "train"), 2);
  EXPECT_EQ(text::edit_distance("predcit", "predict"), 2);
  EXPECT_EQ(text::edit_distance("", "abc"), 3);
  EXPECT_EQ(text::edit_distance("sample", "sample"), 0);
}
