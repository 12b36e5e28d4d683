// The held-out loss of a split run: its gathered weights evaluated on one rank
// (trainer/train/heldout.h) give the number a one-rank run of the same training reports.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "trainer/data/story_corpus.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/train/heldout.h"
#include "trainer/train/trainer.h"

namespace onegpu::trainer {
namespace {

TEST(HeldoutLoss, SplitRunMatchesTheOneRankRun) {
  StoryCorpusOptions co;
  co.target_bytes = std::size_t{96} << 10;
  const Corpus corpus = generate_story_corpus(co);
  BpeTokenizer tok = BpeTokenizer::train(corpus.train);
  const TokenDataset train = TokenDataset::build(tok, corpus.train);
  const TokenDataset heldout = TokenDataset::build(tok, corpus.heldout);
  ModelConfig mc = model_preset("story");
  mc.vocab = (int)tok.vocab_size();
  constexpr int kSteps = 3;

  TrainOptions to;
  to.steps = 100;
  to.batch = 4;
  to.microbatches = 2;
  Trainer one(mc, to, tok, corpus);
  for (int i = 0; i < kSteps; ++i) one.step();
  const double one_rank = one.heldout_loss();
  // The same weights through the weights-only path: bitwise the same number.
  const ParamStore& p = one.model().params();
  const std::vector<float> w(p.master.data(), p.master.data() + p.master.size());
  EXPECT_EQ(heldout_loss(mc, w, heldout), one_rank);

  // pp=2 runs the same maths in the same order as one rank (parity_test): after the same
  // steps its gathered weights score the same held-out loss, up to rounding.
  ParallelOptions po;
  po.pp = 2;
  po.microbatches = 2;
  po.batch = 4;
  po.steps = 100;
  po.workers = 2;
  ParallelTrainer split(mc, po, train);
  for (int i = 0; i < kSteps; ++i) split.step();
  const double split_loss = heldout_loss(mc, split.master_weights(), heldout);
  EXPECT_NEAR(split_loss, one_rank, 1e-5 * one_rank);
  // Training moved the weights: untrained weights score worse.
  Trainer fresh(mc, to, tok, corpus);
  EXPECT_GT(fresh.heldout_loss(), one_rank + 1e-3);

  EXPECT_THROW(heldout_loss(mc, std::vector<float>(10), heldout), Error);

  // One kept model, evaluated on one set of weights, then another, then the first again: each
  // the number a model made anew for it gives, bit for bit (nothing of one evaluation stays).
  const std::vector<float> untrained(fresh.model().params().master.data(),
                                     fresh.model().params().master.data() + fresh.model().params().master.size());
  HeldoutModel kept(mc);
  EXPECT_EQ(kept.loss(w, heldout), one_rank);
  EXPECT_EQ(kept.loss(untrained, heldout), heldout_loss(mc, untrained, heldout));
  EXPECT_EQ(kept.loss(w, heldout), one_rank);
  EXPECT_EQ(kept.loss(w, heldout, 16), heldout_loss(mc, w, heldout, 16));
  EXPECT_THROW(kept.loss(std::vector<float>(10), heldout), Error);
}

}  // namespace
}  // namespace onegpu::trainer
