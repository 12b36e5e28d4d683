#include "trainer/data/story_words.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <utility>

#include "trainer/error.h"
#include "trainer/io/json.h"
#include "trainer/io/text.h"

namespace onegpu::trainer {

namespace {

namespace fs = std::filesystem;
using Lines = std::vector<std::string>;

// Every list of text, by its key (the generator reads the members, not this table).
const std::array<std::pair<const char*, Lines StoryWords::*>, 24> kLists = {{
    {"names", &StoryWords::names},
    {"kinds", &StoryWords::kinds},
    {"she_kinds", &StoryWords::she_kinds},
    {"he_kinds", &StoryWords::he_kinds},
    {"adjectives", &StoryWords::adjectives},
    {"homes", &StoryWords::homes},
    {"regions", &StoryWords::regions},
    {"hobbies", &StoryWords::hobbies},
    {"fears", &StoryWords::fears},
    {"objects", &StoryWords::objects},
    {"far_places", &StoryWords::far_places},
    {"foods", &StoryWords::foods},
    {"terrain", &StoryWords::terrain},
    {"feelings", &StoryWords::feelings},
    {"weather", &StoryWords::weather},
    {"obstacles", &StoryWords::obstacles},
    {"solutions", &StoryWords::solutions},
    {"endings", &StoryWords::endings},
    {"morals", &StoryWords::morals},
    {"other_openings", &StoryWords::other_openings},
    {"once_openings", &StoryWords::once_openings},
    {"countables", &StoryWords::countables},
    {"event_starts", &StoryWords::event_starts},
    {"friend_meets", &StoryWords::friend_meets},
}};
const std::array<std::pair<const char*, std::string StoryWords::Quest::*>, 4> kQuestFields = {{
    {"event", &StoryWords::Quest::event},
    {"goal", &StoryWords::Quest::goal},
    {"found", &StoryWords::Quest::found},
    {"fixed", &StoryWords::Quest::fixed},
}};
const std::array<std::pair<const char*, std::string StoryWords::WhyTale::*>, 4> kWhyFields = {{
    {"animal", &StoryWords::WhyTale::animal},
    {"problem", &StoryWords::WhyTale::problem},
    {"gift", &StoryWords::WhyTale::gift},
    {"today", &StoryWords::WhyTale::today},
}};
// The slots Writer::slot (story_corpus.cpp) fills.
constexpr std::array<std::string_view, 19> kSlots = {"N",     "F",    "K",      "K2",    "he",   "him", "his",
                                                     "He",    "His",  "O",      "L",     "W",    "fear", "feel",
                                                     "home",  "region", "intro", "a_adj_kind", "fintro"};
constexpr std::size_t kMaxItems = 10000;
constexpr std::size_t kMaxText = 1000;

// One text of the file: printable, short, and its braces only known slots.
std::string text_at(const json::Value& v, const std::string& at) {
  if (!v.is_string()) throw Error(at + " must be text");
  const std::string& s = v.as_string();
  if (s.empty()) throw Error(at + " is empty");
  if (s.size() > kMaxText) throw Error(at + " is longer than " + std::to_string(kMaxText) + " bytes");
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) throw Error(at + " holds a control character");
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '}') throw Error(at + " has a '}' with no '{'");
    if (s[i] != '{') continue;
    const std::size_t close = s.find_first_of("{}", i + 1);
    if (close == std::string::npos || s[close] != '}') throw Error(at + " has a '{' with no '}'");
    const std::string_view slot = std::string_view(s).substr(i + 1, close - i - 1);
    if (std::find(kSlots.begin(), kSlots.end(), slot) == kSlots.end())
      throw Error(at + " has an unknown slot {" + text::printable(slot) + "}");
    i = close;
  }
  return s;
}

const json::Value::Array& items_at(const json::Value& v, const std::string& at) {
  if (!v.is_array()) throw Error(at + " must be an array");
  if (v.as_array().empty()) throw Error(at + " is empty");
  if (v.as_array().size() > kMaxItems) throw Error(at + " holds more than " + std::to_string(kMaxItems) + " items");
  return v.as_array();
}

template <class Record, std::size_t N>
std::vector<Record> records_at(const json::Value& v, const std::string& at,
                               const std::array<std::pair<const char*, std::string Record::*>, N>& fields) {
  std::vector<Record> out;
  for (const json::Value& item : items_at(v, at)) {
    const std::string here = at + "[" + std::to_string(out.size()) + "]";
    if (!item.is_object()) throw Error(here + " must be an object");
    Record r;
    for (const auto& [key, field] : item.as_object()) {
      const std::string& k = key;  // (clang 14 cannot capture a structured binding)
      const auto f = std::find_if(fields.begin(), fields.end(), [&](const auto& p) { return k == p.first; });
      if (f == fields.end()) throw Error(here + " has an unknown key '" + text::printable(key) + "'");
      r.*(f->second) = text_at(field, here + "." + key);
    }
    for (const auto& [key, field] : fields)
      if ((r.*field).empty()) throw Error(here + " has no '" + key + "'");
    out.push_back(std::move(r));
  }
  return out;
}

bool contains(const Lines& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// The rules between lists (the generator relies on each).
void check_together(const StoryWords& w) {
  if (std::none_of(w.names.begin(), w.names.end(), [&](const std::string& n) { return n != w.names[0]; }))
    throw Error("'names' needs two different names at least (a hero and a friend)");
  for (const auto* list : {&w.she_kinds, &w.he_kinds})
    for (const std::string& k : *list)
      if (!contains(w.kinds, k))
        throw Error("'" + std::string(list == &w.she_kinds ? "she_kinds" : "he_kinds") + "' names '" +
                    text::printable(k) + "', which is not in 'kinds'");
  for (std::size_t i = 0; i < w.once_openings.size(); ++i)
    if (w.once_openings[i].rfind("Once upon a {W}", 0) != 0)
      throw Error("once_openings[" + std::to_string(i) + "] must start \"Once upon a {W}\"");
  for (std::size_t i = 0; i < w.countables.size(); ++i)
    if (w.countables[i].size() < 2 || w.countables[i].back() != 's')
      throw Error("countables[" + std::to_string(i) + "] must be a plural ending in 's' (the story counts one of them first)");
}

void no_once_upon(const std::string& s, const std::string& at) {
  if (s.find("Once upon a") != std::string::npos)
    throw Error(at + " holds \"Once upon a\", which only once_openings may");
}

}  // namespace

StoryWords parse_story_words(std::string_view json_text, const std::string& where) {
  try {
    const json::Value v = json::parse(json_text, 4);
    if (!v.is_object()) throw Error("must be one JSON object, like {\"names\": [\"Pip\", ...], ...}");
    StoryWords w;
    std::vector<std::string> seen;
    for (const auto& [key, value] : v.as_object()) {
      seen.push_back(key);
      const std::string& k = key;
      const auto list = std::find_if(kLists.begin(), kLists.end(), [&](const auto& p) { return k == p.first; });
      if (key == "about") {
        if (!value.is_string()) throw Error("'about' must be text");
      } else if (key == "quests") {
        w.quests = records_at(value, key, kQuestFields);
      } else if (key == "why_tales") {
        w.why_tales = records_at(value, key, kWhyFields);
      } else if (list != kLists.end()) {
        Lines& out = w.*(list->second);
        for (const json::Value& item : items_at(value, key)) {
          const std::string at = key + "[" + std::to_string(out.size()) + "]";
          out.push_back(text_at(item, at));
          if (key != "once_openings") no_once_upon(out.back(), at);
        }
      } else {
        throw Error("unknown key '" + text::printable(key) + "'");
      }
    }
    for (const char* key : {"quests", "why_tales"})
      if (!contains(seen, key)) throw Error(std::string("missing '") + key + "'");
    for (const auto& [key, member] : kLists)
      if (!contains(seen, key)) throw Error(std::string("missing '") + key + "'");
    for (std::size_t i = 0; i < w.quests.size(); ++i)
      for (const auto& [key, field] : kQuestFields)
        no_once_upon(w.quests[i].*field, "quests[" + std::to_string(i) + "]." + key);
    for (std::size_t i = 0; i < w.why_tales.size(); ++i)
      for (const auto& [key, field] : kWhyFields)
        no_once_upon(w.why_tales[i].*field, "why_tales[" + std::to_string(i) + "]." + key);
    check_together(w);
    return w;
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
}

StoryWords load_story_words(const fs::path& file) {
  const std::string where = "story words " + text::printable(file.string());
  std::error_code ec;
  if (!fs::exists(file, ec)) throw Error(where + ": no such file");
  if (!fs::is_regular_file(file, ec)) throw Error(where + ": not a regular file");
  if (fs::file_size(file, ec) > kMaxStoryWordsBytes) throw Error(where + ": larger than 1 MB");
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in || ss.str().empty()) throw Error(where + ": cannot read it (or it is empty)");
  return parse_story_words(ss.str(), where);
}

const StoryWords& source_tree_story_words() {
#ifdef ONEGPU_STORY_WORDS_FILE
  static const StoryWords words = load_story_words(ONEGPU_STORY_WORDS_FILE);
  return words;
#else
  throw Error("story corpus: no word lists given, and this build knows no source tree to read them from");
#endif
}

}  // namespace onegpu::trainer
