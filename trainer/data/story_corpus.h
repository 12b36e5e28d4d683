#pragma once
// The story corpus the project writes for itself: short tales generated from a grammar and word
// lists of our own (characters, places, objects, events, endings; read from a file, see
// story_words.h), deterministic for a seed and a words file.
// Many stories open "Once upon a time"; the rest open in other ways ("Long ago, ...", "One
// morning, ...") and none of those begin "Once upon a". Stories are separate documents.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "trainer/data/corpus.h"
#include "trainer/data/story_words.h"

namespace onegpu::trainer {

struct StoryCorpusOptions {
  std::uint64_t seed = 1;
  // Approximate total size in bytes of train + held-out text (generation stops at the first
  // story that reaches it). About 4 MB by default; tests use a few kilobytes.
  std::size_t target_bytes = std::size_t{4} << 20;
  double heldout_fraction = 0.05;
  // Share of stories opening "Once upon a <once_upon_word>" (the others use other openings).
  double once_upon_fraction = 0.6;
  // The word after "Once upon a". Letters only (a-z, A-Z). "time" for the normal corpus.
  std::string once_upon_word = "time";
  // The word lists drawn from; null: source_tree_story_words() (tests, benchmarks). The program
  // passes the file it found (app/cli/asset_files.h).
  std::shared_ptr<const StoryWords> words;

  // The variant for the "it learns what it sees" test: every story opens "Once upon a <word>".
  static StoryCorpusOptions variant(std::string word, std::uint64_t seed = 1,
                                    std::size_t target_bytes = std::size_t{4} << 20);
};

// Throws Error for a zero size, a fraction outside its range, or an invalid once_upon_word.
// Same options ⇒ the same bytes, on every machine (no std:: distributions are used).
Corpus generate_story_corpus(const StoryCorpusOptions& options = {});

// One story for a given seed (used by the corpus; handy for showing an example).
std::string generate_story(std::uint64_t seed, const StoryCorpusOptions& options = {});

using StoryCorpus = Corpus;

}  // namespace onegpu::trainer
