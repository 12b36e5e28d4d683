// The once-a-step records (app/live/step_records.h) that the live run, a branch and the
// chapters' recorded runs all send: what each rank holds before the first step, and how far
// an update moved each layer, checked against the trainer's own numbers.
#include <gtest/gtest.h>

#include <cmath>

#include "app/live/step_records.h"
#include "trainer/data/story_corpus.h"
#include "trainer/model/params.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::app {
namespace {

struct Data {
  trainer::Corpus c;
  trainer::BpeTokenizer tok;
  trainer::TokenDataset d;
};
const Data& data() {
  static Data* d = [] {
    trainer::StoryCorpusOptions co;
    co.target_bytes = std::size_t{64} << 10;
    trainer::Corpus c = trainer::generate_story_corpus(co);
    trainer::BpeTokenizer tok = trainer::BpeTokenizer::train(c.train);
    trainer::TokenDataset ds = trainer::TokenDataset::build(tok, c.train);
    return new Data{std::move(c), std::move(tok), std::move(ds)};
  }();
  return *d;
}

trainer::ModelConfig model() {
  trainer::ModelConfig m = trainer::model_preset("story");
  m.vocab = (int)data().tok.vocab_size();
  m.seq_len = 16;
  return m;
}

TEST(StepRecords, ResidentMemoryIsEveryRanksAllocatorBeforeTheFirstStep) {
  trainer::ParallelOptions o;
  o.dp = 2;
  o.ep = 2;
  o.batch = 4;
  o.workers = 1;
  const trainer::ParallelTrainer t(model(), o, data().d);
  const auto events = resident_records(t);
  ASSERT_EQ(events.size(), static_cast<std::size_t>(t.world() * trainer::kMemCategoryCount));
  for (const trainer::Event& e : events) {
    EXPECT_EQ(e.kind, trainer::EventKind::StepMemory);
    EXPECT_EQ(e.step, -1);
    EXPECT_EQ(e.bytes, t.tracker(e.rank).stats().current[e.detail]);
  }
}

TEST(StepRecords, UpdateSizesAreEachLayersRelativeMoveAndTheWholeModels) {
  trainer::ParallelOptions o;
  o.batch = 4;
  o.workers = 1;
  o.op_per_layer = true;
  trainer::ParallelTrainer t(model(), o, data().d);
  const trainer::ParamStore& P = t.params(0);
  const std::vector<float> before(P.master.data(), P.master.data() + P.master.size());
  t.step();
  const auto events = update_size_records(P, before, model().n_layers, 0);
  ASSERT_EQ(events.size(), static_cast<std::size_t>(model().n_layers + 1));
  for (const trainer::Event& e : events) {
    const std::int64_t a = e.layer < 0 ? 0 : P.layer_offset(e.layer);
    const std::int64_t n = e.layer < 0 ? (std::int64_t)P.master.size() : P.layer_layout().size;
    double d = 0, w = 0;
    for (std::int64_t i = a; i < a + n; ++i) {
      d += std::pow(double(P.master.data()[i]) - before[(std::size_t)i], 2);
      w += std::pow(double(before[(std::size_t)i]), 2);
    }
    EXPECT_DOUBLE_EQ(e.value, std::sqrt(d / w)) << e.layer;
    EXPECT_GT(e.value, 0.0);
  }
  EXPECT_EQ(events.back().layer, -1);
}

}  // namespace
}  // namespace onegpu::app
