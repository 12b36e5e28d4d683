// Whole-model gradient check (router included, through the gates with the selection held fixed),
// the 18-bytes-per-weight memory identity, presets and config validation.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/gradcheck.h"
#include "trainer/error.h"
#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"

using namespace onegpu::trainer;
using onegpu::trainer::test::grads_close;
using onegpu::trainer::test::numeric_grad;

namespace {

ModelConfig tiny() {
  ModelConfig c;
  c.name = "tiny";
  c.vocab = 24;
  c.d_model = 8;
  c.n_heads = 2;
  c.n_layers = 2;
  c.n_experts = 4;
  c.top_k = 2;
  c.expert_hidden = 6;
  c.seq_len = 5;
  c.aux_loss_coef = 0.1f;  // large, so their gradients are visible to the check
  c.z_loss_coef = 0.05f;
  return c;
}

Batch random_batch(const ModelConfig& c, int B, std::uint64_t seed) {
  Rng r(seed);
  Batch b;
  b.B = B;
  b.S = c.seq_len;
  for (int i = 0; i < B * c.seq_len; ++i) {
    b.inputs.push_back((std::int32_t)(r.next() % c.vocab));
    b.targets.push_back((std::int32_t)(r.next() % c.vocab));
  }
  b.targets[1] = -1;  // one ignored position
  return b;
}

}  // namespace

// A pipeline stage's microbatch state holds caches for its own layers only (a stage of a
// 32-layer model runs four), and a block outside them is one clear error, not a stray write.
TEST(MicrobatchStateLayers, CachesForItsOwnLayersOnly) {
  MemoryTracker mt;
  CpuBackend be(mt, 1);
  ModelConfig c = tiny();
  ASSERT_GE(c.n_layers, 2);
  Model m(c, be, mt, 3);
  MicrobatchState st;
  m.begin(st, random_batch(c, 2, 7), 1, c.n_layers - 1);
  EXPECT_EQ(st.layer0, 1);
  EXPECT_EQ(st.layer_caches.size(), (std::size_t)(c.n_layers - 1));
  EXPECT_EQ(&st.layer(1), &st.layer_caches[0]);
  EXPECT_THROW(st.layer(0), Error);
  EXPECT_THROW(st.layer(c.n_layers), Error);
  EXPECT_THROW(m.begin(st, random_batch(c, 2, 7), 1, c.n_layers), Error) << "past the model's last layer";
  m.begin(st, random_batch(c, 2, 7));  // one GPU: every layer
  EXPECT_EQ(st.layer0, 0);
  EXPECT_EQ(st.layer_caches.size(), (std::size_t)c.n_layers);
}

TEST(ModelGradcheck, EveryParameterMatchesFiniteDifferences) {
  MemoryTracker mt;
  CpuBackend be(mt, 1);
  ModelConfig c = tiny();
  Model m(c, be, mt, 3);
  m.set_exact(true);
  // Give the router real weight so its gradients are not negligible.
  auto& P = m.params();
  for (const auto& t : P.tensors())
    if (t.kind == ParamKind::Router)
      for (std::int64_t i = 0; i < t.size(); ++i) P.master[t.offset + i] *= 20.f;
  Batch b = random_batch(c, 2, 7);
  LossScales sc{0.5f, 0.7f};

  MicrobatchState st;
  m.forward(st, b);
  std::vector<std::vector<std::int32_t>> routing;
  for (auto& lc : st.layer_caches) routing.emplace_back(lc.routing.expert.begin(), lc.routing.expert.end());
  m.set_forced_routing(routing);

  auto objective = [&] {
    MicrobatchState s;
    m.forward(s, b);
    return sc.ce_scale * s.ce_sum + sc.aux_scale * s.aux_sum;
  };
  P.zero_grads();
  m.forward_backward(st, b, sc);
  std::vector<float> analytic(P.grads.begin(), P.grads.end());

  int checked = 0;
  for (const auto& t : P.tensors()) {
    double dot = 0, na = 0, nn = 0;
    for (std::int64_t i = 0; i < t.size(); ++i) {
      std::int64_t j = t.offset + i;
      double num = numeric_grad(&P.master[j], 1e-2, objective);
      ASSERT_TRUE(grads_close(analytic[j], num, t.name + "[" + std::to_string(i) + "]"));
      dot += analytic[j] * num;
      na += analytic[j] * analytic[j];
      nn += num * num;
      ++checked;
    }
    // Direction of the whole tensor's gradient, which catches errors too small for the
    // element-wise tolerance (embedding rows of unused tokens are exactly zero: skip those).
    if (nn > 1e-12) {
      EXPECT_GT(dot / std::sqrt(na * nn), 0.999) << t.name;
    }
    if (t.kind != ParamKind::Embedding) {
      EXPECT_GT(na, 0.0) << t.name << " has no gradient";
    }
  }
  EXPECT_EQ(checked, P.count());
}

TEST(ModelGradcheck, GatesCarryRouterGradientWithoutAuxLosses) {
  // With the auxiliary losses off, the router learns only through the renormalised gates.
  MemoryTracker mt;
  CpuBackend be(mt, 1);
  ModelConfig c = tiny();
  c.aux_loss_coef = 0.f;
  c.z_loss_coef = 0.f;
  Model m(c, be, mt, 5);
  m.set_exact(true);
  Batch b = random_batch(c, 2, 9);
  MicrobatchState st;
  m.params().zero_grads();
  m.forward_backward(st, b, {1.f, 1.f});
  const auto& t = m.params().tensors()[5];  // layers.0.router
  ASSERT_EQ(t.name, "layers.0.router");
  double n = 0;
  for (std::int64_t i = 0; i < t.size(); ++i) n += std::fabs(m.params().grads[t.offset + i]);
  EXPECT_GT(n, 1e-6);
}

TEST(Memory, WeightsGradsOptimizerAreEighteenBytesPerWeight) {
  for (const char* name : {"story", "story8", "scale"}) {
    MemoryTracker mt;
    CpuBackend be(mt, 1);
    ModelConfig c = model_preset(name);
    Model m(c, be, mt, 1);
    std::int64_t n = m.params().count();
    EXPECT_EQ(n, param_breakdown(c).total()) << name;
    EXPECT_EQ(mt.current(MemCategory::Weights), 2 * n);
    EXPECT_EQ(mt.current(MemCategory::Gradients), 4 * n);
    EXPECT_EQ(mt.current(MemCategory::Optimizer), 12 * n);
    EXPECT_EQ(mt.current(MemCategory::Weights) + mt.current(MemCategory::Gradients) +
                  mt.current(MemCategory::Optimizer),
              18 * n)
        << name;
    auto pb = param_breakdown(c);
    EXPECT_GT(pb.experts * 2, pb.total()) << name << ": experts should hold most weights";
  }
}

TEST(Memory, ActivationsAreMeasuredAndReleasedAfterBackward) {
  MemoryTracker mt;
  CpuBackend be(mt, 1);
  ModelConfig c = tiny();
  Model m(c, be, mt, 1);
  Batch b = random_batch(c, 2, 1);
  MicrobatchState st;
  m.forward_backward(st, b, {1.f, 1.f});
  auto after_first = mt.current(MemCategory::Activations);  // backend scratch may stay
  EXPECT_GT(mt.peak(MemCategory::Activations), after_first);
  m.forward_backward(st, b, {1.f, 1.f});
  EXPECT_EQ(mt.current(MemCategory::Activations), after_first);
  // A forward alone keeps the caches: activations grow with layers.
  m.forward(st, b);
  EXPECT_GT(mt.current(MemCategory::Activations), after_first);
  Model::release(st);
  EXPECT_EQ(mt.current(MemCategory::Activations), after_first);
}

TEST(Config, BadSizesAreClearErrors) {
  ModelConfig c = model_preset("story");
  c.top_k = 17;
  EXPECT_THROW(c.validate(), Error);
  c = model_preset("story");
  c.n_layers = 0;
  EXPECT_THROW(c.validate(), Error);
  c = model_preset("story");
  c.d_model = -64;
  EXPECT_THROW(c.validate(), Error);
  EXPECT_THROW(model_preset("huge"), Error);
  c = model_preset("scale");
  EXPECT_EQ(c.n_layers, 32);
  EXPECT_EQ(c.n_experts, 64);
  ModelConfig back = config_from_string(config_to_string(c));
  EXPECT_EQ(config_to_string(back), config_to_string(c));
  EXPECT_THROW(config_from_string("name=story;vocab=x"), Error);
}

TEST(Model, BadTokensAreClearErrors) {
  MemoryTracker mt;
  CpuBackend be(mt, 1);
  ModelConfig c = tiny();
  Model m(c, be, mt, 1);
  Batch b = random_batch(c, 1, 1);
  b.inputs[0] = c.vocab;
  MicrobatchState st;
  EXPECT_THROW(m.forward(st, b), Error);
}

TEST(Model, Bf16WeightsGiveNearlyTheExactLoss) {
  // Training reads bf16 weights; the gradient checks read the fp32 master copy. Both must agree
  // to bf16 precision (about 3 significant digits), and the bf16 copy must be the rounded master.
  MemoryTracker mt;
  CpuBackend be(mt, 1);
  ModelConfig c = tiny();
  Model m(c, be, mt, 2);
  const auto& P = m.params();
  for (std::int64_t i = 0; i < P.count(); ++i) ASSERT_EQ(P.weights[i], float_to_bf16(P.master[i]));
  Batch b = random_batch(c, 2, 4);
  MicrobatchState st;
  m.forward(st, b);
  double bf = st.ce_sum;
  m.set_exact(true);
  m.forward(st, b);
  double exact = st.ce_sum;
  EXPECT_NE(bf, exact);
  EXPECT_NEAR(bf, exact, 1e-2 * std::fabs(exact));
}
