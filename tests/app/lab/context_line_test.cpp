// The by-hand read-out's context line (app/lab/context_line.h): it starts at a word, keeps the
// ellipsis where anything was left out, and never cuts a character in half.
#include <gtest/gtest.h>

#include <string>

#include "app/lab/context_line.h"

namespace onegpu::app {
namespace {

// Every code point 10 wide (continuation bytes count nothing).
float code_points_w(const std::string& s) {
  float w = 0;
  for (unsigned char c : s) w += (c & 0xC0) == 0x80 ? 0.0f : 10.0f;
  return w;
}

TEST(ContextLine, AWordsTailIsLeftOutAndTheLineStartsAtAWord) {
  EXPECT_EQ(context_line("hase butterflies", false, 1000.0f, code_points_w), "\u2026 butterflies \u2192 ?");
  EXPECT_EQ(context_line(" the cat sat", false, 1000.0f, code_points_w), "\u2026 the cat sat \u2192 ?");
}

TEST(ContextLine, TheTextsOwnStartIsKeptWhole) {
  EXPECT_EQ(context_line("Once upon a time", true, 1000.0f, code_points_w), "Once upon a time \u2192 ?");
}

TEST(ContextLine, ANarrowColumnDropsWholeWordsFromTheFront) {
  const std::string l = context_line("Once upon a time there", true, 160.0f, code_points_w);
  EXPECT_EQ(l, "\u2026 time there \u2192 ?");
  EXPECT_LE(code_points_w(l), 160.0f);
}

TEST(ContextLine, OneWordTooWideLosesWholeCharactersFromTheFront) {
  const std::string l = context_line("caf\u00e9\u00e9\u00e9\u00e9\u00e9", true, 90.0f, code_points_w);
  EXPECT_LE(code_points_w(l), 90.0f);
  EXPECT_EQ(l.rfind("\u2026 ", 0), 0u);
  // Only whole code points: the first byte after the ellipsis starts one.
  const unsigned char first = static_cast<unsigned char>(l[std::string("\u2026 ").size()]);
  EXPECT_NE(first & 0xC0, 0x80);
  EXPECT_NE(l.find("\u00e9 \u2192 ?"), std::string::npos);
}

}  // namespace
}  // namespace onegpu::app
