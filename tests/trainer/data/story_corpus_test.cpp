#include "trainer/data/story_corpus.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

namespace onegpu::trainer {
namespace {

StoryCorpusOptions small(std::uint64_t seed = 1, std::size_t bytes = 200000) {
  StoryCorpusOptions o;
  o.seed = seed;
  o.target_bytes = bytes;
  return o;
}

std::vector<std::string> all_docs(const Corpus& c) {
  std::vector<std::string> v = c.train;
  v.insert(v.end(), c.heldout.begin(), c.heldout.end());
  return v;
}

TEST(StoryCorpus, SameSeedSameBytes) {
  const Corpus a = generate_story_corpus(small(7));
  const Corpus b = generate_story_corpus(small(7));
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.heldout, b.heldout);
  const Corpus c = generate_story_corpus(small(8));
  EXPECT_NE(a.train, c.train);
}

std::uint64_t fingerprint(const Corpus& c) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over every document, each ended by 0xff
  for (const auto* part : {&c.train, &c.heldout})
    for (const auto& d : *part) {
      for (unsigned char ch : d) h = (h ^ ch) * 0x100000001b3ull;
      h = (h ^ 0xffu) * 0x100000001b3ull;
    }
  return h;
}

TEST(StoryCorpus, FingerprintIsFixed) {
  // Resuming a run regenerates the corpus, so its bytes must not drift between builds or
  // machines (the generator uses no std:: distributions, whose output differs between standard
  // libraries). If you change the grammar on purpose, update this fingerprint: old runs then
  // no longer resume bit-identically.
  const Corpus c = generate_story_corpus(small(7));
  EXPECT_EQ(c.train.size(), 232u);
  EXPECT_EQ(c.heldout.size(), 12u);
  EXPECT_EQ(fingerprint(c), 0x1d66eea8e6787df1ull);
}

// The word lists moved from code to assets/corpus/story.json: the corpus every run trains on
// (the default), the "it learns what it sees" variant and one with no "Once upon a" kept the
// bytes they had when the lists were in code (fingerprints taken before the move).
TEST(StoryCorpus, WordsFromTheAssetFileGiveTheCorpusOfBefore) {
  const Corpus a = generate_story_corpus();
  EXPECT_EQ(a.train.size(), 4883u);
  EXPECT_EQ(a.heldout.size(), 257u);
  EXPECT_EQ(fingerprint(a), 0xea28b66ade1655bfull);
  const Corpus b = generate_story_corpus(StoryCorpusOptions::variant("dream", 1, std::size_t{1} << 20));
  EXPECT_EQ(b.train.size(), 1222u);
  EXPECT_EQ(fingerprint(b), 0x03086ed39361789cull);
  StoryCorpusOptions o = small(9, 300000);
  o.once_upon_fraction = 0.0;
  const Corpus c = generate_story_corpus(o);
  EXPECT_EQ(c.train.size(), 345u);
  EXPECT_EQ(fingerprint(c), 0x926f0df42bcfcad9ull);
  // The same file passed in by a caller (as the program does) gives the same bytes.
  o.words = std::make_shared<const StoryWords>(load_story_words(ONEGPU_TEST_ASSETS "/corpus/story.json"));
  EXPECT_EQ(fingerprint(generate_story_corpus(o)), 0x926f0df42bcfcad9ull);
}

TEST(StoryCorpus, SizeFollowsTheTarget) {
  for (std::size_t target : {1000u, 50000u, 300000u}) {
    const Corpus c = generate_story_corpus(small(3, target));
    const std::size_t total = c.train_bytes() + c.heldout_bytes();
    EXPECT_GE(total, target);
    EXPECT_LT(total, target + 4000);  // stops at the first story past the target
    EXPECT_FALSE(c.train.empty());
    EXPECT_FALSE(c.heldout.empty());
  }
}

TEST(StoryCorpus, DefaultIsSeveralMegabytes) {
  const Corpus c = generate_story_corpus();
  EXPECT_GE(c.train_bytes() + c.heldout_bytes(), std::size_t{4} << 20);
  EXPECT_GT(c.train.size(), 3000u);
}

TEST(StoryCorpus, OpeningsAreMostlyOnceUponATime) {
  const Corpus c = generate_story_corpus(small(5, 400000));
  const auto docs = all_docs(c);
  std::size_t once = 0;
  std::set<std::string> other_openings;
  for (const auto& d : docs) {
    // "Once upon a" appears only at a story's start, and is always followed by " time".
    const auto at = d.find("Once upon a");
    if (at == std::string::npos) {
      other_openings.insert(d.substr(0, d.find(' ', d.find(' ') + 1)));  // first two words
      continue;
    }
    EXPECT_EQ(at, 0u) << d;
    EXPECT_EQ(d.compare(0, 17, "Once upon a time,"), 0) << d.substr(0, 40);
    EXPECT_EQ(d.find("Once upon a", 1), std::string::npos);
    ++once;
  }
  const double share = static_cast<double>(once) / docs.size();
  EXPECT_NEAR(share, 0.6, 0.05);
  // Other openings are varied, not one fixed phrase.
  EXPECT_GE(other_openings.size(), 8u);
}

TEST(StoryCorpus, VariantOpensWithTheChosenWord) {
  const Corpus c = generate_story_corpus(StoryCorpusOptions::variant("lantern", 2, 100000));
  for (const auto& d : all_docs(c)) {
    EXPECT_EQ(d.compare(0, 20, "Once upon a lantern,"), 0) << d.substr(0, 40);
    EXPECT_EQ(d.find("Once upon a time"), std::string::npos);
  }
}

TEST(StoryCorpus, HeldOutIsDisjoint) {
  const Corpus c = generate_story_corpus(small(9, 300000));
  std::set<std::string> train(c.train.begin(), c.train.end());
  EXPECT_EQ(train.size(), c.train.size());  // no story twice
  for (const auto& h : c.heldout) EXPECT_EQ(train.count(h), 0u);
  const double share = static_cast<double>(c.heldout.size()) / (c.train.size() + c.heldout.size());
  EXPECT_NEAR(share, 0.05, 0.01);
}

TEST(StoryCorpus, StoriesAreVariedAndClean) {
  const Corpus c = generate_story_corpus(small(4, 300000));
  std::set<std::string> names, places;
  for (const auto& d : all_docs(c)) {
    EXPECT_EQ(d.find_first_of("{}"), std::string::npos) << d;  // every slot filled
    EXPECT_EQ(d.find("\n\n"), std::string::npos);             // no blank line inside a story
    EXPECT_FALSE(first_invalid_utf8(d));
    EXPECT_NE(d.back(), '\n');
    const auto n = d.find(" named ");
    if (n != std::string::npos) names.insert(d.substr(n + 7, d.find_first_of(" .,", n + 7) - n - 7));
    const auto r = d.find("reached ");
    if (r != std::string::npos) places.insert(d.substr(r + 8, d.find('.', r) - r - 8));
  }
  EXPECT_GE(names.size(), 40u);
  EXPECT_GE(places.size(), 12u);
  // Written to a file with blank lines between stories, the documents come back the same.
  std::string text;
  for (const auto& d : c.train) text += d + "\n\n";
  EXPECT_EQ(split_documents(text), c.train);
}

TEST(StoryCorpus, BadOptionsAreErrors) {
  StoryCorpusOptions o = small();
  o.target_bytes = 0;
  EXPECT_THROW(generate_story_corpus(o), Error);
  o = small();
  o.once_upon_fraction = 1.5;
  EXPECT_THROW(generate_story_corpus(o), Error);
  o = small();
  o.heldout_fraction = 0;
  EXPECT_THROW(generate_story_corpus(o), Error);
  EXPECT_THROW(generate_story_corpus(StoryCorpusOptions::variant("two words")), Error);
  EXPECT_THROW(generate_story_corpus(StoryCorpusOptions::variant("")), Error);
}

TEST(StoryCorpus, OneStoryIsStableForItsSeed) {
  EXPECT_EQ(generate_story(12345), generate_story(12345));
  EXPECT_NE(generate_story(12345), generate_story(12346));
  EXPECT_GT(generate_story(1).size(), 200u);
}

}  // namespace
}  // namespace onegpu::trainer
