#pragma once
// The data the program loads (the assets/ folder): run presets (assets/runs, run_preset.h) and
// the story corpus's word lists (assets/corpus/story.json, trainer/data/story_words.h).
// The folder is $ONEGPU_ASSETS if set, else assets/ beside the program (every build copies it
// there), else the source tree the program was built from.
#include <filesystem>
#include <memory>
#include <string>

#include "trainer/data/corpus.h"
#include "trainer/data/story_words.h"

namespace onegpu::cli {

std::filesystem::path assets_dir();

// The story corpus's word lists from assets_dir(), read once and shared (the generator's
// StoryCorpusOptions::words). A missing or broken file throws trainer::Error with one line
// naming it; the next call tries again.
std::shared_ptr<const trainer::StoryWords> story_words();

// The text a run trains on: `corpus_file` (train --corpus) if given, else the story corpus
// generated from story_words(). `onegpu train`, `predict`/`sample` resuming, and the Lab's runs.
trainer::Corpus training_corpus(const std::string& corpus_file);

}  // namespace onegpu::cli
