// A step run one piece at a time is the same step: same order of pieces, same loss, same
// weights, bit for bit, as Trainer::step().
#include <gtest/gtest.h>

#include <cstring>

#include "trainer/data/bpe_tokenizer.h"
#include "trainer/data/story_corpus.h"
#include "trainer/error.h"
#include "trainer/train/step_runner.h"
#include "trainer/train/trainer.h"

using namespace onegpu::trainer;

namespace {

const Corpus& corpus() {
  static Corpus c = [] {
    StoryCorpusOptions o;
    o.target_bytes = 120 << 10;
    return generate_story_corpus(o);
  }();
  return c;
}
const BpeTokenizer& tokenizer() {
  static BpeTokenizer t = BpeTokenizer::train(corpus().train, {400, 2});
  return t;
}
std::unique_ptr<Trainer> make(int microbatches) {
  ModelConfig m = model_preset("story");
  m.seq_len = 16;
  TrainOptions o;
  o.steps = 10;
  o.batch = 4;
  o.microbatches = microbatches;
  o.seed = 5;
  return std::make_unique<Trainer>(m, o, tokenizer(), corpus());
}

}  // namespace

TEST(StepRunner, PiecesComeInTrainingOrder) {
  auto t = make(2);
  StepRunner r(*t);
  const int L = t->model().config().n_layers;
  EXPECT_EQ(r.pieces_per_step(), 2 * (2 * L + 3) + 1);
  std::vector<Piece> seen;
  while (!r.done()) {
    Piece want = r.peek();
    Piece got = r.run_next();
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_EQ(got.layer, want.layer);
    seen.push_back(got);
  }
  ASSERT_EQ(static_cast<int>(seen.size()), r.pieces_per_step());
  for (int mb = 0; mb < 2; ++mb) {
    const Piece* p = &seen[mb * (2 * L + 3)];
    EXPECT_EQ(p[0].kind, PieceKind::Embed);
    for (int l = 0; l < L; ++l) {
      EXPECT_EQ(p[1 + l].kind, PieceKind::LayerForward);
      EXPECT_EQ(p[1 + l].layer, l);
      EXPECT_EQ(p[2 + L + l].kind, PieceKind::LayerBackward);
      EXPECT_EQ(p[2 + L + l].layer, L - 1 - l);  // backward runs top down
    }
    EXPECT_EQ(p[1 + L].kind, PieceKind::Head);
    EXPECT_GT(p[1 + L].loss, 0.0);
    EXPECT_EQ(p[2 * L + 2].kind, PieceKind::EmbedBackward);
    EXPECT_EQ(p[0].microbatch, mb);
  }
  EXPECT_EQ(seen.back().kind, PieceKind::Update);
  EXPECT_EQ(r.result().step, 1);
  EXPECT_EQ(t->steps_done(), 1);
  EXPECT_THROW(r.run_next(), Error);
}

TEST(StepRunner, PieceByPieceEqualsAWholeStepBitForBit) {
  for (int micro : {1, 2}) {
    auto a = make(micro), b = make(micro);
    for (int s = 0; s < 3; ++s) {
      StepResult whole = a->step();
      StepRunner r(*b);
      while (!r.done()) r.run_next();
      EXPECT_EQ(whole.loss, r.result().loss) << "step " << s;
      EXPECT_EQ(whole.grad_norm, r.result().grad_norm);
    }
    const auto& pa = a->model().params();
    const auto& pb = b->model().params();
    EXPECT_EQ(0, std::memcmp(pa.master.data(), pb.master.data(), pa.count() * sizeof(float)));
  }
}

TEST(StepRunner, ActivationsRiseThroughForwardAndAreFreedAfterBackward) {
  auto t = make(1);
  StepRunner r(*t);
  std::int64_t prev = -1, peak = 0;
  while (!r.done()) {
    Piece p = r.run_next();
    auto act = p.memory.current[static_cast<int>(MemCategory::Activations)];
    if (p.kind == PieceKind::LayerForward) {
      EXPECT_GT(act, prev);  // each layer keeps what its backward will need
      prev = act;
    }
    peak = std::max(peak, act);
    if (p.kind == PieceKind::EmbedBackward) { EXPECT_LT(act, peak); }
  }
}

TEST(StepRunner, AGivenBatchMustFitTheOptions) {
  auto t = make(1);
  Batch wrong;
  wrong.B = 3;
  wrong.S = 16;
  wrong.inputs.assign(48, 1);
  wrong.targets.assign(48, 1);
  EXPECT_THROW(StepRunner(*t, wrong), Error);
}
