// trainer/train/limits: the memory estimate that refuses configurations before allocating is an
// over-estimate of what a step really takes (the tracker's measured peak), and not a wild one.
#include "trainer/train/limits.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "trainer/data/bpe_tokenizer.h"
#include "trainer/data/story_corpus.h"
#include "trainer/error.h"
#include "trainer/train/trainer.h"

using namespace onegpu::trainer;

TEST(Limits, EstimateCoversTheMeasuredPeakOfAStep) {
  StoryCorpusOptions co;
  co.target_bytes = 40 << 10;
  Corpus c = generate_story_corpus(co);
  for (auto [batch, micro] : std::vector<std::pair<int, int>>{{4, 1}, {8, 2}}) {
    TrainOptions o;
    o.steps = 2;
    o.batch = batch;
    o.microbatches = micro;
    Trainer t(model_preset("story"), o, BpeTokenizer::train(c.train), c);
    t.step();
    const MemStats s = t.tracker().stats();
    std::int64_t peak = 0;
    for (auto p : s.peak) peak += p;
    const auto& cfg = t.model().config();
    const std::uint64_t est =
        limits::weight_bytes(cfg) + limits::activation_bytes(cfg, (std::uint64_t)(batch / micro), cfg.seq_len);
    EXPECT_GE(est, (std::uint64_t)peak) << "batch " << batch;
    EXPECT_LE(est, (std::uint64_t)peak * 6) << "batch " << batch << ": the estimate would refuse runs that fit";
    EXPECT_GE(limits::activation_bytes(cfg, batch / micro, cfg.seq_len), (std::uint64_t)s.peak[(int)MemCategory::Activations]);
  }
}

TEST(Limits, HugeSizesSaturateInsteadOfWrapping) {
  ModelConfig c = model_preset("story");
  c.n_layers = 512;
  c.n_experts = 4096;
  c.expert_hidden = 65536;
  c.d_model = 16384;
  EXPECT_GT(limits::weight_bytes(c), 1ull << 50);
  EXPECT_EQ(limits::activation_bytes(c, ~0ull, ~0ull), ~0ull);
  EXPECT_THROW(c.validate(), Error);  // more than any machine here has
}

TEST(Limits, BudgetCanBeLoweredForTests) {
  ::setenv("ONEGPU_MEMORY_LIMIT", "1000", 1);
  EXPECT_EQ(limits::memory_budget(), 1000u);
  try {
    limits::require_memory(5000, "--batch 9", "use a smaller --batch");
    ADD_FAILURE() << "not refused";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--batch 9 needs about 5 KB of memory, more than the 1 KB this machine has; use a smaller --batch");
  }
  ::unsetenv("ONEGPU_MEMORY_LIMIT");
  EXPECT_GT(limits::memory_budget(), 1u << 20);
}
