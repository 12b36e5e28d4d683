// The training loop: determinism across runs and thread counts, bitwise resume from a
// checkpoint, microbatch accumulation, checkpoint errors, and the probes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>

#include "tests/support/temp_dir.h"
#include "trainer/data/story_corpus.h"
#include "trainer/error.h"
#include "trainer/io/safetensors.h"
#include "trainer/train/probes.h"
#include "trainer/train/trainer.h"

using namespace onegpu::trainer;

namespace {

const Corpus& small_corpus() {
  static Corpus c = [] {
    StoryCorpusOptions o;
    o.target_bytes = 200 << 10;
    return generate_story_corpus(o);
  }();
  return c;
}
const BpeTokenizer& small_tokenizer() {
  static BpeTokenizer t = BpeTokenizer::train(small_corpus().train, {512, 2});
  return t;
}
ModelConfig small_model() {
  ModelConfig c = model_preset("story");
  c.seq_len = 32;
  return c;
}
TrainOptions opts(int steps, int threads, int micro = 1) {
  TrainOptions o;
  o.steps = steps;
  o.batch = 4;
  o.microbatches = micro;
  o.threads = threads;
  o.seed = 11;
  o.eval_rows = 16;
  return o;
}
std::vector<double> run(Trainer& t, int n) {
  std::vector<double> l;
  for (int i = 0; i < n; ++i) l.push_back(t.step().loss);
  return l;
}
bool same_master(Trainer& a, Trainer& b) {
  auto& pa = a.model().params();
  auto& pb = b.model().params();
  return pa.count() == pb.count() && std::memcmp(pa.master.data(), pb.master.data(), pa.count() * 4) == 0 &&
         std::memcmp(pa.adam_v.data(), pb.adam_v.data(), pa.count() * 4) == 0;
}

}  // namespace

TEST(Training, SameSeedGivesBitwiseIdenticalLossesOnOneAndTwoThreads) {
  Trainer a(small_model(), opts(6, 1), small_tokenizer(), small_corpus());
  Trainer b(small_model(), opts(6, 1), small_tokenizer(), small_corpus());
  Trainer c(small_model(), opts(6, 2), small_tokenizer(), small_corpus());
  auto la = run(a, 6), lb = run(b, 6), lc = run(c, 6);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(std::memcmp(&la[i], &lb[i], 8), 0) << "run to run, step " << i;
    EXPECT_EQ(std::memcmp(&la[i], &lc[i], 8), 0) << "1 vs 2 threads, step " << i;
  }
  EXPECT_TRUE(same_master(a, b));
  EXPECT_TRUE(same_master(a, c));
  EXPECT_NE(la.back(), la.front());  // the weights moved
  // A different seed gives a different run.
  auto o = opts(6, 1);
  o.seed = 12;
  Trainer d(small_model(), o, small_tokenizer(), small_corpus());
  EXPECT_NE(run(d, 1)[0], la[0]);
}

TEST(Training, MicrobatchesInShardsGiveTheSameBitsOnAnyThreadCount) {
  // Two microbatches of 2 texts a step on 1, 2 and 3 threads: on two or more, each of two
  // threads runs a whole microbatch (SplitStep's pair; the third sits out); gradients
  // accumulated over the two.
  Trainer a(small_model(), opts(3, 1, 2), small_tokenizer(), small_corpus());
  Trainer b(small_model(), opts(3, 2, 2), small_tokenizer(), small_corpus());
  Trainer c(small_model(), opts(3, 3, 2), small_tokenizer(), small_corpus());
  for (int i = 0; i < 3; ++i) {
    auto ra = a.step(), rb = b.step(), rc = c.step();
    EXPECT_EQ(std::memcmp(&ra.loss, &rb.loss, 8), 0) << "step " << i;
    EXPECT_EQ(std::memcmp(&ra.loss, &rc.loss, 8), 0) << "step " << i;
    EXPECT_EQ(std::memcmp(&ra.aux_loss, &rb.aux_loss, 8), 0) << "step " << i;
    EXPECT_EQ(std::memcmp(&ra.grad_norm, &rb.grad_norm, 8), 0) << "step " << i;
  }
  EXPECT_TRUE(same_master(a, b));
  EXPECT_TRUE(same_master(a, c));
}

TEST(Training, ResumeFromCheckpointIsBitwiseIdentical) {
  Trainer full(small_model(), opts(6, 1), small_tokenizer(), small_corpus());
  auto lf = run(full, 6);
  Trainer first(small_model(), opts(6, 1), small_tokenizer(), small_corpus());
  run(first, 3);
  const onegpu::trainer::testing::TempDir dir;
  auto path = dir.file("resume.safetensors");
  first.save(path);
  auto resumed = Trainer::resume(path, small_corpus(), 6, 2);
  EXPECT_EQ(resumed->steps_done(), 3);
  auto lr = run(*resumed, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(std::memcmp(&lf[3 + i], &lr[i], 8), 0) << "step " << 3 + i;
  EXPECT_TRUE(same_master(full, *resumed));
  EXPECT_TRUE(resumed->done());
  std::remove(path.c_str());
}

TEST(Training, MicrobatchesAccumulateToTheSameStep) {
  Trainer one(small_model(), opts(3, 1, 1), small_tokenizer(), small_corpus());
  Trainer two(small_model(), opts(3, 1, 2), small_tokenizer(), small_corpus());
  Trainer four(small_model(), opts(3, 1, 4), small_tokenizer(), small_corpus());
  auto a = one.step(), b = two.step(), c = four.step();
  EXPECT_NEAR(a.loss, b.loss, 1e-5);
  EXPECT_NEAR(a.loss, c.loss, 1e-5);
  // Router losses are per microbatch, so only the language-model gradient is comparable exactly;
  // the norms still agree closely.
  EXPECT_NEAR(a.grad_norm, b.grad_norm, 0.05 * a.grad_norm);
  // Activation peak falls with more microbatches: the memory picture depends on it.
  EXPECT_LT(four.tracker().peak(MemCategory::Activations), one.tracker().peak(MemCategory::Activations));
}

TEST(Training, StepReportsMemoryByCategoryAndSchedule) {
  Trainer t(small_model(), opts(100, 1), small_tokenizer(), small_corpus());
  auto r = t.step();
  auto n = t.model().params().count();
  EXPECT_EQ(r.memory.current[(int)MemCategory::Weights] + r.memory.current[(int)MemCategory::Gradients] +
                r.memory.current[(int)MemCategory::Optimizer],
            18 * n);
  EXPECT_GT(r.memory.peak[(int)MemCategory::Activations], 0);
  EXPECT_GT(r.tokens_per_s, 0);
  EXPECT_GT(r.grad_norm, 0);
  EXPECT_FLOAT_EQ(r.lr, t.options().optim.lr / t.options().optim.warmup_steps);  // warmup
  EXPECT_NEAR(learning_rate(t.options().optim, 100), t.options().optim.lr * t.options().optim.min_lr_ratio, 1e-6);
  EXPECT_GT(learning_rate(t.options().optim, 50), learning_rate(t.options().optim, 80));  // cosine
  double h = t.heldout_loss();
  EXPECT_TRUE(std::isfinite(h));
  EXPECT_EQ(h, t.heldout_loss());  // deterministic windows
}

TEST(Checkpoint, CorruptTruncatedOrIncompleteFilesAreClearErrors) {
  Trainer t(small_model(), opts(3, 1), small_tokenizer(), small_corpus());
  t.step();
  t.step();
  const onegpu::trainer::testing::TempDir dir;
  auto path = dir.file("ck.safetensors");
  t.save(path);
  EXPECT_NO_THROW(Trainer::load_for_inference(path));
  EXPECT_THROW(Trainer::load_for_inference(dir.file("does-not-exist.safetensors")), Error);
  // Truncated.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto bad = dir.file("ck-bad.safetensors");
  {
    std::ofstream out(bad, std::ios::binary);
    out.write(bytes.data(), (long)bytes.size() / 2);
  }
  EXPECT_THROW(Trainer::load_for_inference(bad), Error);
  // A tensor missing.
  auto f = safetensors::load(path);
  safetensors::File g;
  g.metadata = f.metadata;
  for (const auto& [name, x] : f.tensors())
    if (name != "optim.master.layers.1.wo") g.add(name, x.dtype, x.shape, x.bytes);
  safetensors::save(g, bad);
  try {
    Trainer::load_for_inference(bad);
    FAIL() << "no error for a missing tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layers.1.wo"), std::string::npos) << e.what();
  }
  // A config that does not match the tensors.
  g = f;
  auto cfg = config_from_string(f.meta("config"));
  cfg.expert_hidden = 64;
  g.metadata["config"] = config_to_string(cfg);
  safetensors::save(g, bad);
  EXPECT_THROW(Trainer::load_for_inference(bad), Error);
  // Not a checkpoint at all.
  safetensors::File empty;
  safetensors::save(empty, bad);
  EXPECT_THROW(Trainer::load_for_inference(bad), Error);
  // --steps below the checkpoint's step (2), or not positive.
  EXPECT_THROW(Trainer::resume(path, small_corpus(), 1, 1), Error);
  EXPECT_THROW(Trainer::resume(path, small_corpus(), -1, 1), Error);
  // No --steps (0): the checkpoint's own, 3.
  EXPECT_EQ(Trainer::resume(path, small_corpus(), 0, 1)->options().steps, 3);
  std::remove(path.c_str());
  std::remove(bad.c_str());
}

TEST(Probes, ReadOutsHaveTheRightShapeAndMove) {
  Trainer t(small_model(), opts(10, 1), small_tokenizer(), small_corpus());
  Model& m = t.model();
  const auto& tok = t.tokenizer();
  auto w0 = sample_layer_weights(m, 1);
  auto pos = sample_weight_positions(m, 1);
  t.step();
  auto w1 = sample_layer_weights(m, 1);
  int moved = 0;
  for (int i = 0; i < 16; ++i) moved += w0[i] != w1[i];
  EXPECT_GT(moved, 8);
  EXPECT_EQ(pos, sample_weight_positions(m, 1));
  EXPECT_GT(pos[15], pos[0]);
  EXPECT_THROW(sample_layer_weights(m, 4), Error);

  auto gn = layer_grad_norms(m);
  ASSERT_EQ(gn.layers.size(), 4u);
  for (double g : gn.layers) EXPECT_GT(g, 0.0);
  EXPECT_GT(gn.embedding, 0.0);
  EXPECT_GT(gn.head, 0.0);

  auto top = next_token_distribution(m, tok, "Once upon a", 5);
  ASSERT_EQ(top.size(), 5u);
  double sum = 0;
  for (std::size_t i = 0; i < top.size(); ++i) {
    sum += top[i].prob;
    if (i) {
      EXPECT_GE(top[i - 1].prob, top[i].prob);
    }
  }
  EXPECT_LE(sum, 1.0 + 1e-9);
  EXPECT_THROW(next_token_distribution(m, tok, "", 5), Error);

  auto ids = tok.encode("Once upon a time there was a cat.");
  auto rc = router_choices(m, ids, 2);
  ASSERT_EQ(rc.size(), ids.size());
  for (const auto& c : rc) {
    ASSERT_EQ(c.experts.size(), 2u);
    EXPECT_NE(c.experts[0], c.experts[1]);
    EXPECT_NEAR(c.gates[0] + c.gates[1], 1.f, 1e-5);
    EXPECT_GE(c.gates[0], c.gates[1]);
  }

  Rng rng(3);
  Batch b = sample_batch(t.train_data(), 3, 32, rng);
  auto per = per_text_loss(m, b);
  ASSERT_EQ(per.size(), 3u);
  MicrobatchState st;
  m.forward(st, b);
  EXPECT_NEAR(std::accumulate(per.begin(), per.end(), 0.0) / 3, st.ce_sum / st.n_targets, 1e-5);
}

TEST(Training, BadOptionsAreClearErrors) {
  auto o = opts(0, 1);
  EXPECT_THROW(Trainer(small_model(), o, small_tokenizer(), small_corpus()), Error);
  o = opts(5, 1, 3);  // batch 4 not divisible by 3
  EXPECT_THROW(Trainer(small_model(), o, small_tokenizer(), small_corpus()), Error);
  auto c = small_model();
  c.top_k = 20;
  EXPECT_THROW(Trainer(c, opts(5, 1), small_tokenizer(), small_corpus()), Error);
}
