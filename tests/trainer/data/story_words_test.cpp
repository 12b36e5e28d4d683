// The story corpus's words file (assets/corpus/story.json): the shipped one loads, the generator
// draws from what it holds, and every broken rule is one line naming the file and the key.
#include "trainer/data/story_words.h"

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "trainer/data/story_corpus.h"
#include "trainer/error.h"
#include "trainer/io/json.h"

namespace onegpu::trainer {
namespace {

const char* const kShipped = ONEGPU_TEST_ASSETS "/corpus/story.json";

std::string shipped_text() {
  std::ifstream in(kShipped, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The shipped file with one key replaced (or removed, when `v` is nullopt-like: erase=true).
std::string with(const std::string& key, json::Value v, bool erase = false) {
  json::Value doc = json::parse(shipped_text());
  if (erase) {
    auto& o = doc.as_object();
    std::erase_if(o, [&](const auto& kv) { return kv.first == key; });
  } else {
    doc.set(key, std::move(v));
  }
  return doc.dump();
}

json::Value texts(std::initializer_list<const char*> items) {
  json::Value a = json::Value::array();
  for (const char* s : items) a.push_back(s);
  return a;
}

// The message a bad text gets (empty if it loads).
std::string refusal(const std::string& text) {
  try {
    parse_story_words(text, "story words test.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(StoryWords, ShippedFileLoadsAndIsWhatTheGeneratorUses) {
  const StoryWords w = load_story_words(kShipped);
  EXPECT_EQ(w.names.size(), 60u);
  EXPECT_EQ(w.kinds.size(), 48u);
  EXPECT_EQ(w.quests.size(), 16u);
  EXPECT_EQ(w.why_tales.size(), 8u);
  EXPECT_EQ(w.names.front(), "Pip");
  EXPECT_EQ(w.quests[3].goal, "find a new spring");
  const StoryWords& d = source_tree_story_words();
  EXPECT_EQ(d.names, w.names);
  EXPECT_EQ(d.endings, w.endings);
}

TEST(StoryWords, TheGeneratorDrawsFromTheFileItIsGiven) {
  StoryCorpusOptions o;
  o.target_bytes = 30000;
  o.words = std::make_shared<const StoryWords>(
      parse_story_words(with("names", texts({"Ada", "Bo"})), "story words test.json"));
  std::set<std::string> named;
  for (const auto& d : generate_story_corpus(o).train) {
    for (std::size_t at = d.find(" named "); at != std::string::npos; at = d.find(" named ", at + 1))
      named.insert(d.substr(at + 7, d.find_first_of(" .,", at + 7) - at - 7));
  }
  EXPECT_EQ(named, (std::set<std::string>{"Ada", "Bo"}));
}

TEST(StoryWords, EachBrokenRuleIsOneLineNamingTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[1, 2]", "must be one JSON object"},
      {"{\"names\": [\"a\"", "JSON"},
      {with("colours", texts({"red"})), "unknown key 'colours'"},
      {with("morals", {}, true), "missing 'morals'"},
      {with("quests", {}, true), "missing 'quests'"},
      {with("foods", json::Value::array()), "foods is empty"},
      {with("foods", texts({"bread", ""})), "foods[1] is empty"},
      {with("foods", json::Value(3)), "foods must be an array"},
      {with("foods", [] { json::Value a = texts({"bread"}); a.push_back(7); return a; }()), "foods[1] must be text"},
      {with("endings", texts({"And {N} met {X}."})), "endings[0] has an unknown slot {X}"},
      {with("endings", texts({"And {N met them."})), "endings[0] has a '{' with no '}'"},
      {with("endings", texts({"And N} went home."})), "endings[0] has a '}' with no '{'"},
      {with("endings", texts({"Two\nlines."})), "endings[0] holds a control character"},
      {with("once_openings", texts({"Long ago, {intro} lived {home}."})), "once_openings[0] must start \"Once upon a {W}\""},
      {with("morals", texts({"Once upon a time is how it starts."})), "morals[0] holds \"Once upon a\""},
      {with("countables", texts({"apples", "sheep"})), "countables[1] must be a plural ending in 's'"},
      {with("she_kinds", texts({"mermaid"})), "'she_kinds' names 'mermaid', which is not in 'kinds'"},
      {with("names", texts({"Pip", "Pip"})), "'names' needs two different names"},
      {with("quests", [] {
         json::Value a = json::Value::array();
         a.push_back(json::Value::object({{"event", "e"}, {"goal", "g"}, {"found", "f"}}));
         return a;
       }()), "quests[0] has no 'fixed'"},
      {with("why_tales", [] {
         json::Value a = json::Value::array();
         a.push_back(json::Value::object({{"animal", "a"}, {"colour", "c"}}));
         return a;
       }()), "why_tales[0] has an unknown key 'colour'"},
      {with("about", json::Value(1)), "'about' must be text"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string got = refusal(text);
    EXPECT_NE(got.find(expected), std::string::npos) << "expected '" << expected << "', got '" << got << "'";
    EXPECT_EQ(got.rfind("story words test.json: ", 0), 0u) << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
}

TEST(StoryWords, MissingOrOversizedFilesAreOneLine) {
  const auto dir = std::filesystem::temp_directory_path() / "onegpu_story_words_test";
  std::filesystem::create_directories(dir);
  try {
    load_story_words(dir / "none.json");
    ADD_FAILURE() << "a missing file loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("none.json: no such file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_story_words(dir), Error);  // a folder
  {
    std::ofstream big(dir / "big.json");
    big << std::string(kMaxStoryWordsBytes + 1, ' ');
  }
  try {
    load_story_words(dir / "big.json");
    ADD_FAILURE() << "an oversized file loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("larger than 1 MB"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace onegpu::trainer
