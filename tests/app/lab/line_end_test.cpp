// The Lab's own wrapping (app/lab/lab_flow.h): lines break between words only, so a number
// such as "0.65" is never cut after its full stop, as ImGui's wrapping did ("0." / "65 s").
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/lab/lab_flow.h"

namespace onegpu::app {
namespace {

// Every character 10 wide.
float width(const char* a, const char* b) { return 10.0f * (float)(b - a); }

std::vector<std::string> lines(const std::string& text, float room) {
  std::vector<std::string> out;
  const char* p = text.c_str();
  do {
    const char* cut = line_end(p, room, width);
    out.emplace_back(p, cut);
    p = *cut ? cut + 1 : cut;
  } while (*p);
  return out;
}

TEST(LineEnd, BreaksBetweenWordsOnlyAndKeepsNumbersWhole) {
  const std::string text = "expert weights: all-gather (ZeRO-1): 32.4 GB over ib x1, 0.65 s (modelled)";
  for (float room : {60.0f, 90.0f, 120.0f, 200.0f, 400.0f}) {
    const std::vector<std::string> ls = lines(text, room);
    std::string joined;
    for (const std::string& l : ls) {
      joined += (joined.empty() ? "" : " ") + l;
      // A line is wider than the room only when it is one word (or a number and its unit).
      if (width(l.data(), l.data() + l.size()) > room) {
        const std::size_t sp = l.find(' ');
        EXPECT_TRUE(sp == std::string::npos || (l.find(' ', sp + 1) == std::string::npos &&
                                                render::keeps_with_next(l.substr(0, sp), l.substr(sp + 1))))
            << room << ": " << l;
      }
    }
    EXPECT_EQ(joined, text) << "nothing lost or added at room " << room;
    bool whole = false;
    for (const std::string& l : ls) whole |= l.find("0.65") != std::string::npos;
    EXPECT_TRUE(whole) << "0.65 cut at room " << room;
    // A number and its unit on one line (render/text_breaks.h): no line ends in "32.4" or "0.65".
    for (const std::string& l : ls) {
      EXPECT_FALSE(l.ends_with("32.4")) << room << ": " << l;
      EXPECT_FALSE(l.ends_with("0.65")) << room << ": " << l;
    }
  }
  EXPECT_EQ(lines(text, 2000.0f).size(), 1u);
}

TEST(LineEnd, ANumberAndItsUnitMoveToTheNextLineTogether) {
  // "weights 30.1" fits a room of 12 characters, "weights 30.1 GB" does not: the number goes
  // down with its unit.
  EXPECT_EQ(lines("weights 30.1 GB here", 120.0f), (std::vector<std::string>{"weights", "30.1 GB here"}));
  EXPECT_EQ(lines("a 30.1 GB", 60.0f), (std::vector<std::string>{"a", "30.1 GB"}));
  // Alone wider than the room, the pair stands alone like a long word.
  EXPECT_EQ(lines("a 30.1 GB b", 40.0f), (std::vector<std::string>{"a", "30.1 GB", "b"}));
}

TEST(LineEnd, AWordWiderThanTheRoomStandsAlone) {
  EXPECT_EQ(lines("a 123456789 b", 40.0f), (std::vector<std::string>{"a", "123456789", "b"}));
  EXPECT_EQ(lines("123456789", 40.0f), (std::vector<std::string>{"123456789"}));
}

}  // namespace
}  // namespace onegpu::app
