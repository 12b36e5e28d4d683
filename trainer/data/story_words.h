#pragma once
// The story corpus's word lists and sentence patterns, read from a JSON file (the project ships
// assets/corpus/story.json). The generator (story_corpus.cpp) draws from the lists by index, in
// the file's order: the same file gives the same corpus, byte for byte; any edit changes it.
//
// The format: one JSON object holding exactly these keys ("about", a line of text, may be added):
//   names kinds adjectives homes regions hobbies fears objects far_places foods terrain feelings
//   weather obstacles solutions endings morals other_openings once_openings countables
//   event_starts friend_meets      arrays of text, none empty
//   she_kinds he_kinds             kinds always told as "she" / "he" (the others are drawn)
//   quests                         [{"event", "goal", "found", "fixed"}, ...]
//   why_tales                      [{"animal", "problem", "gift", "today"}, ...]
// Text may hold {slots} the story fills in (N, F, K, K2, he, him, his, He, His, O, L, W, fear,
// feel, home, region, intro, a_adj_kind, fintro); any other brace is refused. Every
// once_opening starts "Once upon a {W}" and no other text holds "Once upon a" (the corpus's
// promise about its openings). Countables are plurals ending in "s"; names hold two at least.
// A file that breaks a rule is refused with one line naming the file and the key (Error).
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace onegpu::trainer {

struct StoryWords {
  struct Quest {  // a problem, what the hero then wants, what is found, how it ends
    std::string event, goal, found, fixed;
  };
  struct WhyTale {  // an animal, what it once could not do, its gift, how things are today
    std::string animal, problem, gift, today;
  };
  std::vector<std::string> names, kinds, she_kinds, he_kinds, adjectives, homes, regions, hobbies,
      fears, objects, far_places, foods, terrain, feelings, weather;
  std::vector<Quest> quests;
  std::vector<std::string> obstacles, solutions, endings, morals, other_openings, once_openings;
  std::vector<WhyTale> why_tales;
  std::vector<std::string> countables, event_starts, friend_meets;
};

// Larger than this is refused before reading (the shipped file is about 15 KB).
inline constexpr std::size_t kMaxStoryWordsBytes = std::size_t{1} << 20;

// Checks and reads the text of a words file; `where` starts every message ("story words FILE").
StoryWords parse_story_words(std::string_view json_text, const std::string& where);
// Reads and checks one file. Throws Error "story words FILE: <problem>".
StoryWords load_story_words(const std::filesystem::path& file);
// The lists in the source tree this library was built from (assets/corpus/story.json), read
// once. What the generator uses when its options name no lists: tests and benchmarks. The
// program finds its own file (app/cli/asset_files.h) and passes the lists in.
const StoryWords& source_tree_story_words();

}  // namespace onegpu::trainer
