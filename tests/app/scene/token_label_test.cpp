#include <gtest/gtest.h>

#include "app/scene/token_label.h"

using onegpu::app::token_label;

TEST(TokenLabel, WholeCharactersStayTextPartsBecomeHexBytes) {
  EXPECT_EQ(token_label(" time"), " time");
  EXPECT_EQ(token_label("caf\xC3\xA9"), "caf\xC3\xA9");     // é, whole: kept
  EXPECT_EQ(token_label("\xE2\x80"), "<E2 80>");            // the first two bytes of "’"
  EXPECT_EQ(token_label("\x99s"), "<99>s");                 // the last byte of one, then text
  EXPECT_EQ(token_label("a\nb\tc"), "a↵b⇥c");
  EXPECT_EQ(token_label("\x01"), "<01>");                   // other control bytes: hex too
}
