// "It learns": real training runs (about 10-30 s each on two cores), in their own executable
// with the ctest label "learning".
#include <gtest/gtest.h>

#include <cstdio>

#include "trainer/data/story_corpus.h"
#include "trainer/train/probes.h"
#include "trainer/train/trainer.h"

using namespace onegpu::trainer;

namespace {
TrainOptions story_options(int steps) {
  TrainOptions o;
  o.steps = steps;
  o.batch = 4;
  o.seed = 1;
  o.threads = 1;  // ctest runs tests side by side on two cores
  return o;
}
}  // namespace

// The storyboard's run: story, 1,000 steps of 4 texts, on the generated story corpus.
// Measured: p(" time") ~ 0.99 and held-out loss ~ 0.73 (4 MB corpus, seed 1).
TEST(Learning, Story1000StepsPredictsTimeAfterOnceUponA) {
  Corpus corpus = generate_story_corpus();
  BpeTokenizer tok = BpeTokenizer::train(corpus.train);
  const std::int32_t time_id = tok.token_id(" time");
  ASSERT_GE(time_id, 0) << "\" time\" should be one token";
  Trainer t(model_preset("story"), story_options(1000), tok, corpus);
  double before = t.heldout_loss();
  auto p0 = next_token_probs(t.model(), tok.encode("Once upon a"));
  while (!t.done()) t.step();
  double after = t.heldout_loss();
  auto top = next_token_distribution(t.model(), tok, "Once upon a", 3);
  std::printf("held-out loss %.4f -> %.4f; p(time) %.4f -> %.4f\n", before, after, p0[time_id], top[0].prob);
  EXPECT_EQ(top[0].id, time_id) << "top token is '" << top[0].text << "'";
  EXPECT_GT(top[0].prob, 0.5);
  EXPECT_LT(p0[time_id], 0.01);  // it was not there at the start
  EXPECT_LT(after, 1.2);         // the stated figure (measured about 0.73)
  EXPECT_GT(before, 6.0);        // about log(1024) at the start
}

// A corpus where every story opens "Once upon a dream": the model predicts " dream" instead.
TEST(Learning, DifferentOpeningWordIsWhatItPredicts) {
  Corpus corpus = generate_story_corpus(StoryCorpusOptions::variant("dream", 1, std::size_t{1} << 20));
  BpeTokenizer tok = BpeTokenizer::train(corpus.train);
  const std::int32_t id = tok.token_id(" dream");
  ASSERT_GE(id, 0);
  Trainer t(model_preset("story"), story_options(300), tok, corpus);
  while (!t.done()) t.step();
  auto top = next_token_distribution(t.model(), tok, "Once upon a", 3);
  EXPECT_EQ(top[0].id, id) << "top token is '" << top[0].text << "'";
  EXPECT_GT(top[0].prob, 0.5);
  EXPECT_EQ(tok.token_id(" time") >= 0 ? next_token_probs(t.model(), tok.encode("Once upon a"))[tok.token_id(" time")] < 0.05 : true, true);
}
