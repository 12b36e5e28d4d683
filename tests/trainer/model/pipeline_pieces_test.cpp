// The model cut into pipeline stages: two states, the residual stream handed up and its
// gradient handed down, give the same gradients, bit for bit, as one forward_backward.
#include <gtest/gtest.h>

#include <cstring>

#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"

using namespace onegpu::trainer;

TEST(PipelinePieces, TwoStagesMatchTheWholeModelBitForBit) {
  MemoryTracker mt;
  CpuBackend be(mt, 1);
  ModelConfig c = model_preset("story");
  c.vocab = 300;
  c.seq_len = 16;
  Model m(c, be, mt, 4);
  Rng r(9);
  Batch b;
  b.B = 2;
  b.S = 16;
  for (int i = 0; i < 32; ++i) {
    b.inputs.push_back((std::int32_t)(r.next() % 300));
    b.targets.push_back((std::int32_t)(r.next() % 300));
  }
  LossScales sc{1.f / 32, 1.f};
  MicrobatchState whole;
  m.params().zero_grads();
  m.forward_backward(whole, b, sc);
  std::vector<float> g_whole(m.params().grads.begin(), m.params().grads.end());
  double loss_whole = whole.ce_sum;

  m.params().zero_grads();
  MicrobatchState s1, s2;
  m.begin(s1, b);
  m.begin(s2, b);
  m.embed_forward(s1);
  m.layer_forward(0, s1);
  m.layer_forward(1, s1);
  // "send" the activation to stage 2
  s2.x = Buffer<float>(mt, MemCategory::Communication, s1.x.size());
  std::memcpy(s2.x.data(), s1.x.data(), s1.x.size() * 4);
  m.layer_forward(2, s2);
  m.layer_forward(3, s2);
  m.head_forward(s2, true, sc);
  m.layer_backward(3, s2, sc);
  m.layer_backward(2, s2, sc);
  // "send" the gradient back to stage 1
  s1.dx = Buffer<float>(mt, MemCategory::Communication, s2.dx.size());
  std::memcpy(s1.dx.data(), s2.dx.data(), s2.dx.size() * 4);
  m.layer_backward(1, s1, sc);
  m.layer_backward(0, s1, sc);
  m.embed_backward(s1);
  EXPECT_EQ(s2.ce_sum, loss_whole);
  EXPECT_EQ(0, std::memcmp(g_whole.data(), m.params().grads.data(), g_whole.size() * 4));
  Model::release(s1);
  Model::release(s2);
}
