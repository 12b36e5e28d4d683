#pragma once
// The set-up most split-run tests start from: a 64 KiB generated story corpus, a tokenizer
// trained on it, its token dataset, and the `story` model sized to that vocabulary with texts of
// `seq_len` tokens. Built once per test program (the tokenizer is the slow part) and shared.
#include <cstddef>

#include "trainer/data/bpe_tokenizer.h"
#include "trainer/data/story_corpus.h"
#include "trainer/model/config.h"
#include "trainer/parallel/parallel_trainer.h"
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

// The split the parity tests train: `batch` texts in 8-text steps, batch/dp microbatches per
// copy, two engine workers, a short warm-up so a few steps move the weights.
inline trainer::ParallelOptions split_options(int dp, int ep, int pp, trainer::Schedule s, int zero = 0) {
  trainer::ParallelOptions o;
  o.dp = dp;
  o.ep = ep;
  o.pp = pp;
  o.schedule = s;
  o.batch = 8;
  o.microbatches = 8 / dp;
  o.steps = 100;
  o.optim.warmup_steps = 2;
  o.workers = 2;
  o.zero = zero;
  return o;
}

}  // namespace onegpu::test
