#pragma once
// The set-up most split-run tests start from: a 64 KiB generated story corpus, a tokenizer
// trained on it, its token dataset, and the `story` model sized to that vocabulary with texts of
// `seq_len` tokens. Built once per test program (the tokenizer is the slow part) and shared.
#include <cstddef>

#include "trainer/data/bpe_tokenizer.h"
#include "trainer/data/story_corpus.h"
#include "trainer/model/config.h"
#include "trainer/train/dataset.h"

namespace onegpu::test {

struct SmallStory {
  trainer::TokenDataset train;
  trainer::ModelConfig model;
};

// Each sequence length is a template argument so every caller's set-up is a plain static.
template <int SeqLen>
const SmallStory& small_story() {
  static const SmallStory s = [] {
    trainer::StoryCorpusOptions co;
    co.target_bytes = std::size_t{64} << 10;
    trainer::Corpus c = trainer::generate_story_corpus(co);
    trainer::BpeTokenizer tok = trainer::BpeTokenizer::train(c.train);
    SmallStory x{trainer::TokenDataset::build(tok, c.train), trainer::model_preset("story")};
    x.model.vocab = (int)tok.vocab_size();
    x.model.seq_len = SeqLen;
    return x;
  }();
  return s;
}

}  // namespace onegpu::test
