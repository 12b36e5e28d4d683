#include "trainer/data/story_corpus.h"

#include <algorithm>

#include <array>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

// The word lists and sentence patterns (written for this project) are data:
// assets/corpus/story.json, read by story_words.cpp. The plots' shapes are here.

namespace onegpu::trainer {

namespace {

using List = std::vector<std::string_view>;
using Words = StoryWords;

// splitmix64: a tiny generator whose output is the same on every platform. (Not model/params.h's
// Rng: the corpus keeps its own draws. Names in this anonymous namespace are unique in trainer/, as
// unity builds need.)
class StoryRng {
 public:
  explicit StoryRng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) {
    return static_cast<std::size_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }

 private:
  std::uint64_t s_;
};

// The counting story counts one to five ("fifteen in all"): grammar, not a word list.
const List kNumbers = {"one", "two", "three", "four", "five"};
const List kOrdinals = {"first", "second", "third", "fourth", "fifth"};

std::string article_for(std::string_view word) {
  char c = word.empty() ? 'x' : word[0];
  return (c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u') ? "an" : "a";
}

// The hero's own words: "visit {his} friend" becomes "visit my friend".
std::string first_person(std::string_view goal) {
  std::string g(goal);
  for (std::size_t at; (at = g.find("{his}")) != std::string::npos;) g.replace(at, 5, "my");
  return g;
}

struct Who {
  std::string name, kind, adj, he, him, his;
};

bool has(const std::vector<std::string>& v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }

Who make_who(StoryRng& r, const Words& W_, std::string_view avoid_name = {}) {
  Who w;
  do {
    w.name = r.pick(W_.names);
  } while (w.name == avoid_name);
  w.kind = r.pick(W_.kinds);
  w.adj = r.pick(W_.adjectives);
  // Kinds the words file names as she or he are always told so; the others are drawn.
  bool she = has(W_.she_kinds, w.kind) ? true : has(W_.he_kinds, w.kind) ? false : r.chance(0.5);
  w.he = she ? "she" : "he";
  w.him = she ? "her" : "him";
  w.his = she ? "her" : "his";
  return w;
}

class Writer {
 public:
  Writer(StoryRng& r, const Words& words, const Who& hero, const Who& friend_, std::string_view object,
         std::string_view far, std::string_view kind2, std::string_view fear, std::string_view word)
      : r_(r), W_(words), hero_(hero), fr_(friend_), object_(object), far_(far), kind2_(kind2), fear_(fear),
        word_(word) {}

  // Fills {slots} and capitalises the first letter. Every brace is a known slot (story_words.cpp
  // refuses a file with any other).
  std::string fill(std::string_view pattern) {
    std::string out;
    std::size_t i = 0;
    while (i < pattern.size()) {
      if (pattern[i] != '{') {
        out += pattern[i++];
        continue;
      }
      std::size_t close = pattern.find('}', i);
      std::string_view key = pattern.substr(i + 1, close - i - 1);
      i = close + 1;
      out += slot(key);
    }
    if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
    return out;
  }

 private:
  std::string slot(std::string_view k) {
    if (k == "N") return hero_.name;
    if (k == "K") return hero_.kind;
    if (k == "he") return hero_.he;
    if (k == "him") return hero_.him;
    if (k == "his") return hero_.his;
    if (k == "He") return capital(hero_.he);
    if (k == "His") return capital(hero_.his);
    if (k == "F") return fr_.name;
    if (k == "O") return std::string(object_);
    if (k == "L") return std::string(far_);
    if (k == "K2") return std::string(kind2_);
    if (k == "W") return std::string(word_);
    if (k == "fear") return std::string(fear_);
    if (k == "feel") return std::string(r_.pick(W_.feelings));
    if (k == "home") return std::string(r_.pick(W_.homes));
    if (k == "region") return std::string(r_.pick(W_.regions));
    if (k == "intro")
      return article_for(hero_.adj) + " " + hero_.adj + " " + hero_.kind + " named " + hero_.name;
    if (k == "a_adj_kind") return article_for(hero_.adj) + " " + hero_.adj + " " + hero_.kind;
    if (k == "fintro")
      return article_for(fr_.adj) + " " + fr_.adj + " " + fr_.kind + " named " + fr_.name;
    std::string unknown(1, '{');  // not reached: story_words.cpp refuses unknown slots
    unknown.append(k).push_back('}');
    return unknown;
  }

  static std::string capital(std::string s) {
    if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 32);
    return s;
  }

  StoryRng& r_;
  const Words& W_;
  const Who& hero_;
  const Who& fr_;
  std::string_view object_, far_, kind2_, fear_, word_;
};

void validate(const StoryCorpusOptions& o) {
  if (o.target_bytes == 0) throw Error("story corpus: size must be above zero");
  if (!(o.heldout_fraction > 0.0 && o.heldout_fraction < 1.0))
    throw Error("story corpus: held-out fraction must be between 0 and 1");
  if (!(o.once_upon_fraction >= 0.0 && o.once_upon_fraction <= 1.0))
    throw Error("story corpus: \"Once upon a\" fraction must be between 0 and 1");
  if (o.once_upon_word.empty()) throw Error("story corpus: the word after \"Once upon a\" is empty");
  for (char c : o.once_upon_word)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
      throw Error("story corpus: the word after \"Once upon a\" must be letters only, got \"" +
                  o.once_upon_word + "\"");
}

std::string story(std::uint64_t seed, const StoryCorpusOptions& o, const Words& W_) {
  StoryRng r(seed);
  const Who hero = make_who(r, W_);
  const Who fr = make_who(r, W_, hero.name);
  const std::string_view object = r.pick(W_.objects);
  const std::string_view far = r.pick(W_.far_places);
  const std::string_view kind2 = r.pick(W_.kinds);
  const std::string_view fear = r.pick(W_.fears);
  Writer w(r, W_, hero, fr, object, far, kind2, fear, o.once_upon_word);

  std::vector<std::string> paras;
  std::string p;
  auto add = [&](std::string_view pattern) {
    if (!p.empty()) p += ' ';
    p += w.fill(pattern);
  };
  auto para = [&] {
    if (!p.empty()) paras.push_back(std::move(p));
    p.clear();
  };

  // Opening.
  const bool once = r.chance(o.once_upon_fraction);
  add(once ? r.pick(W_.once_openings) : r.pick(W_.other_openings));
  // Who the hero is.
  add("{N} loved to " + std::string(r.pick(W_.hobbies)) + ".");
  if (r.chance(0.5)) add("But {he} was afraid of {fear}.");
  if (r.chance(0.4)) add("Every day, {he} would " + std::string(r.pick(W_.hobbies)) + ".");
  para();

  const Words::Quest& q = W_.quests[r.below(W_.quests.size())];
  const int shape = static_cast<int>(r.below(12));
  if (shape < 7) {
    // A journey with a friend and an obstacle.
    add(std::string(r.pick(W_.event_starts)) + ", " + std::string(q.event) + ".");
    if (r.chance(0.5)) add(r.pick(W_.weather));
    add("{N} decided to go to {L} to " + std::string(q.goal) + ".");
    if (r.chance(0.6)) add("So {he} packed a small bag with " + std::string(r.pick(W_.foods)) + " and set off.");
    // Two draws in one expression are made in an order the compiler picks (GCC right to left,
    // clang left to right), so each is its own statement, in GCC's order: the corpus the tests
    // pin, from either compiler.
    const std::string& past2 = r.pick(W_.terrain);
    const std::string& past1 = r.pick(W_.terrain);
    add("{He} walked past " + past1 + " and " + past2 + ".");
    para();
    add(r.pick(W_.friend_meets));
    add("\"Where are you going?\" asked {F}.");
    add("\"I am going to {L} to " + first_person(q.goal) + ",\" said {N}.");
    add(r.chance(0.5) ? "\"Can I come with you?\" asked {F}. \"Of course,\" said {N}."
                      : "\"That is a long way,\" said {F}. \"I will help you.\"");
    para();
    add("But soon they came to " + std::string(r.pick(W_.obstacles)) + ".");
    add(r.pick(W_.solutions));
    add("At last they reached {L}.");
    add("There they found " + std::string(q.found) + ".");
    add(std::string(q.fixed) + ".");
    para();
    add(r.pick(W_.endings));
  } else if (shape == 7) {
    // A "why" tale, told to the hero by the friend.
    const Words::WhyTale& y = W_.why_tales[r.below(W_.why_tales.size())];
    const std::string a(y.animal);
    add("One evening, {N} asked {F}, \"Why does the " + a + " look the way it does?\"");
    add("{F} smiled and told {him} an old story.");
    para();
    add("\"Long ago, the " + a + " " + std::string(y.problem) + ".");
    add("It was sad, and it asked the wind for help.");
    add("The wind said, 'Be kind to three friends, and you will get what you need.'");
    add("So the " + a + " helped a lost duckling, a tired snail and a cold little moth.");
    add("The next morning, the " + a + " woke up with " + std::string(y.gift) + ".");
    add("And that is why, to this day, " + std::string(y.today) + ".\"");
    para();
    add("{N} thought about the story for a long time, and then fell asleep.");
  } else if (shape == 8) {
    // A counting story: the same sentence, one more each day.
    const std::string thing(r.pick(W_.countables));
    add("{N} wanted to give {F} a present, so {he} began to collect " + thing + ".");
    for (std::size_t d = 0; d < kNumbers.size(); ++d) {
      add("On the " + std::string(kOrdinals[d]) + " day, {N} found " + std::string(kNumbers[d]) + " " +
          (d == 0 ? thing.substr(0, thing.size() - 1) : thing) + ".");
    }
    add("That made fifteen " + thing + " in all.");
    add("{N} put them in a box and gave the box to {F}.");
    add("\"Thank you,\" said {F}. \"This is the best present I have ever had.\"");
  } else if (shape < 11) {
    // A short fable with a moral.
    add(std::string(r.pick(W_.event_starts)) + ", " + std::string(q.event) + ".");
    add("{N} asked {F} for help, but {F} said, \"I am too busy today.\"");
    add("So {N} tried alone. It was hard, and it took a long time.");
    add("In the end, {N} found " + std::string(q.found) + ", and " + std::string(q.fixed) + ".");
    add("The next day, {F} needed help, and {N} helped without a word.");
    para();
    add("The moral of the story: " + std::string(r.pick(W_.morals)));
  } else {
    // A day that goes by, told in order.
    add(r.pick(W_.weather));
    add("In the morning, {N} ate " + std::string(r.pick(W_.foods)) + " for breakfast.");
    add("Then {he} went to visit {F} the " + fr.kind + ".");
    const std::string& hobby = r.pick(W_.hobbies);  // drawn first: see "walked past" above
    const std::string& where = r.pick(W_.terrain);
    add("Together they went to " + where + " to " + hobby + ".");
    add("In the afternoon, {N} found a {O} and gave it to {F}.");
    add("In the evening, they watched the sun go down.");
    para();
    add(r.pick(W_.endings));
  }
  para();

  std::string out;
  for (std::size_t i = 0; i < paras.size(); ++i) {
    if (i) out += '\n';
    out += paras[i];
  }
  return out;
}

const Words& words_of(const StoryCorpusOptions& o) {
  return o.words ? *o.words : source_tree_story_words();
}

std::uint64_t story_hash(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

StoryCorpusOptions StoryCorpusOptions::variant(std::string word, std::uint64_t seed,
                                               std::size_t target_bytes) {
  StoryCorpusOptions o;
  o.seed = seed;
  o.target_bytes = target_bytes;
  o.once_upon_fraction = 1.0;
  o.once_upon_word = std::move(word);
  return o;
}

std::string generate_story(std::uint64_t seed, const StoryCorpusOptions& options) {
  validate(options);
  return story(seed, options, words_of(options));
}

Corpus generate_story_corpus(const StoryCorpusOptions& options) {
  validate(options);
  const Words& words = words_of(options);
  StoryRng seeds(options.seed);
  std::vector<std::string> docs;
  std::unordered_set<std::uint64_t> seen;  // no story twice, so train and held-out never share one
  std::size_t bytes = 0;
  std::size_t misses = 0;
  while (bytes < options.target_bytes || docs.size() < 2) {
    std::string s = story(seeds.next(), options, words);
    if (!seen.insert(story_hash(s)).second) {
      if (++misses > 1000000) throw Error("story corpus: too few distinct stories for this size");
      continue;
    }
    bytes += s.size();
    docs.push_back(std::move(s));
  }
  return split_heldout(std::move(docs), options.heldout_fraction);
}

}  // namespace onegpu::trainer
