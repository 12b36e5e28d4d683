// The presenter handout (`onegpu --notes`): a note for every chapter, its button named, the keys.
#include <gtest/gtest.h>

#include "app/options.h"
#include "app/presenter/notes.h"
#include "app/story.h"

using namespace onegpu::app;

TEST(PresenterNotes, EveryChapterHasANoteToPointAtAndAQuestion) {
  for (const ChapterInfo& c : story()) {
    const PresenterNote& n = presenter_note(c.id);
    EXPECT_EQ(n.id, c.id) << c.id << " has no presenter note";
    EXPECT_GT(n.point.size(), 20u) << c.id;
    EXPECT_NE(n.ask.find('?'), std::string_view::npos) << c.id << ": the question should be a question";
  }
}

TEST(PresenterNotes, MarkdownHasEachChapterItsButtonAndTheKeys) {
  const std::string md = notes_markdown();
  int sections = 0;
  for (std::size_t p = md.find("\n## "); p != std::string::npos; p = md.find("\n## ", p + 1)) ++sections;
  EXPECT_EQ(sections, static_cast<int>(story().size()) + 1);  // the keys, then each chapter
  for (const ChapterInfo& c : story()) {
    EXPECT_NE(md.find(std::string(c.title)), std::string::npos) << c.id;
    if (!c.action.empty()) { EXPECT_NE(md.find("**Button:** " + std::string(c.action)), std::string::npos) << c.id; }
  }
  EXPECT_NE(md.find("| B or . | blank"), std::string::npos);
  EXPECT_NE(md.find("| H | hide every panel"), std::string::npos);
}

TEST(PresenterNotes, OptionsTakeNotesAndReducedMotion) {
  Options o = parse_options({"--notes"});
  EXPECT_TRUE(o.notes);
  o = parse_options({"--reduced-motion"});
  EXPECT_TRUE(o.reduced_motion);
}
