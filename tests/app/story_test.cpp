#include <gtest/gtest.h>

#include <set>
#include <string>

#include "app/chapters/chapter.h"
#include "app/story.h"

using namespace onegpu::app;

TEST(Story, TwentyNineChaptersWithUniqueShortIds) {
  const auto& s = story();
  ASSERT_EQ(s.size(), 29u);
  std::set<std::string_view> ids;
  for (const auto& c : s) {
    EXPECT_TRUE(ids.insert(c.id).second) << c.id;
    EXPECT_LE(c.id.size(), 15u);
    for (char ch : c.id) EXPECT_TRUE((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-') << c.id;
    EXPECT_FALSE(c.title.empty());
    EXPECT_GT(c.caption.size(), 40u) << c.id;
  }
  EXPECT_EQ(s.front().id, "field");
  EXPECT_EQ(s[1].id, "gpu");
  EXPECT_EQ(first_chapter_id(), "field");
}

TEST(Story, PartsComeInStoryOrder) {
  std::vector<std::string_view> parts;
  for (const auto& c : story())
    if (parts.empty() || parts.back() != c.part) parts.push_back(c.part);
  std::vector<std::string_view> want = {"One GPU", "Learning", "Data parallelism", "Expert parallelism",
                                        "Pipeline parallelism", "Scale"};
  EXPECT_EQ(parts, want);
}

TEST(Story, FindChapter) {
  EXPECT_EQ(find_chapter("field"), 0);
  EXPECT_EQ(find_chapter("one-of-512"), 28);
  EXPECT_EQ(find_chapter("nope"), -1);
}

TEST(Story, EveryChapterCanBeMadeAndHasADuration) {
  for (int i = 0; i < static_cast<int>(story().size()); ++i) {
    auto ch = make_chapter(i);
    ASSERT_TRUE(ch) << i;
    EXPECT_GT(ch->duration(), 0.0f);
  }
  EXPECT_EQ(make_chapter(-1), nullptr);
  EXPECT_EQ(make_chapter(29), nullptr);
}
