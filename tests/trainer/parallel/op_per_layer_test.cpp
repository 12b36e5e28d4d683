// One op per layer (the Lab's by-hand view of a rank) runs the same maths as one op per
// chunk: the same losses and bit-for-bit the same weights, for one rank and for pipelines.
#include <gtest/gtest.h>

#include "trainer/data/story_corpus.h"
#include "trainer/events/event_stream.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::trainer {
namespace {

struct Data {
  Corpus c;
  BpeTokenizer tok;
  TokenDataset d;
};
const Data& data() {
  static Data* d = [] {
    StoryCorpusOptions co;
    co.target_bytes = std::size_t{64} << 10;
    Corpus c = generate_story_corpus(co);
    BpeTokenizer tok = BpeTokenizer::train(c.train);
    TokenDataset ds = TokenDataset::build(tok, c.train);
    return new Data{std::move(c), std::move(tok), std::move(ds)};
  }();
  return *d;
}

void same_run(int pp, int microbatches, Schedule s) {
  ModelConfig m = model_preset("story");
  m.vocab = (int)data().tok.vocab_size();
  m.seq_len = 16;
  ParallelOptions o;
  o.pp = pp;
  o.microbatches = microbatches;
  o.schedule = s;
  o.batch = 4;
  o.workers = 2;
  ParallelOptions per_layer = o;
  per_layer.op_per_layer = true;
  ParallelTrainer a(m, o, data().d), b(m, per_layer, data().d);
  EXPECT_GT(b.plan().ops.size(), a.plan().ops.size()) << "more, smaller ops";
  for (int step = 0; step < 2; ++step) {
    const auto ra = a.step(), rb = b.step();
    EXPECT_EQ(ra.loss, rb.loss) << "step " << step;
    EXPECT_EQ(ra.grad_norm, rb.grad_norm);
  }
  int forwards = 0;
  for (const Op& op : b.plan().ops) {
    if (op.kind != OpKind::Forward) continue;
    ++forwards;
    EXPECT_EQ(op.layer_end, op.layer_begin + 1) << describe(op);
  }
  EXPECT_EQ(forwards, m.n_layers * microbatches);
  EXPECT_EQ(a.master_weights(), b.master_weights());
}

TEST(OpPerLayer, OneRankIsBitwiseTheChunkRun) { same_run(1, 1, Schedule::OneFOneB); }
TEST(OpPerLayer, PipelineIsBitwiseTheChunkRun) { same_run(2, 2, Schedule::OneFOneB); }
TEST(OpPerLayer, ZeroBubbleIsBitwiseTheChunkRun) { same_run(2, 2, Schedule::ZeroBubbleH1); }

}  // namespace
}  // namespace onegpu::trainer

namespace onegpu::trainer {
namespace {

// The head's probes of a by-hand run: by default the first text's last position and five
// guesses; probe_position and probe_top move them to an earlier position (a prompt at the
// text's start) and widen the list, without touching the maths.
std::vector<Event> head_probes(int position, int top) {
  ModelConfig m = model_preset("story");
  m.vocab = (int)data().tok.vocab_size();
  m.seq_len = 16;
  ParallelOptions o;
  o.batch = 4;
  o.workers = 1;
  o.op_per_layer = true;
  o.probe_position = position;
  o.probe_top = top;
  EventStream events(2, 4096);
  o.events = &events;
  ParallelTrainer t(m, o, data().d);
  t.step();
  std::vector<Event> out;
  events.drain([&](const Event& e) {
    if (e.kind == EventKind::Probe && e.microbatch == 0 && e.detail != (std::uint8_t)ProbeKind::LayerGradNorm) out.push_back(e);
  });
  return out;
}

int count(const std::vector<Event>& es, ProbeKind k) {
  int n = 0;
  for (const Event& e : es) n += e.detail == (std::uint8_t)k;
  return n;
}

TEST(OpPerLayer, HeadProbesLookWhereAskedAndReportAsManyGuessesAsAsked) {
  const auto last = head_probes(-1, 5), early = head_probes(2, 8);
  EXPECT_EQ(count(last, ProbeKind::NextToken), 5);
  EXPECT_EQ(count(early, ProbeKind::NextToken), 8);
  for (const Event& e : last)
    if (e.detail == (std::uint8_t)ProbeKind::NextToken) { EXPECT_EQ(e.layer, 15); }
  for (const Event& e : early)
    if (e.detail == (std::uint8_t)ProbeKind::NextToken || e.detail == (std::uint8_t)ProbeKind::Target) { EXPECT_EQ(e.layer, 2); }
  // The context is the text up to the position: 8 tokens before the last, 3 before position 2.
  EXPECT_EQ(count(last, ProbeKind::Context), 8);
  EXPECT_EQ(count(early, ProbeKind::Context), 3);
  EXPECT_EQ(count(early, ProbeKind::Target), 1);
}

}  // namespace
}  // namespace onegpu::trainer
