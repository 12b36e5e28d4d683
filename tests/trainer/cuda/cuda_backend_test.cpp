// The CUDA backend against the CPU reference (trainer/ops/cpu_backend.cpp): every op on random
// inputs, the model's gradient check run on the GPU, and 20 training steps of `story` on both.
// Where no GPU is present every test skips with "no CUDA device: ..." (this binary starts
// without a driver: the CUDA runtime is linked statically and cuBLAS is opened only when a
// backend is made).
//
// Tolerances, and why:
//   kOrder (1e-4 relative + 1e-6 absolute): ops whose sums run in another order on the GPU
//     (block trees instead of left-to-right loops: norms, softmax, attention, cross-entropy)
//     or use expf where the CPU uses its own polynomial exp (silu, attention); typical
//     differences are near 1e-7, a wrong index or formula gives differences near 1;
//   matmul: 1e-5 * K * max|a| * max|b| (cuBLAS splits and orders the K sum its own way);
//   exact (EXPECT_EQ on the bits): copies, gathers, bf16 widening, and the ops that add in the
//     CPU's order with no fused multiply-add (embedding backward, scatter-add, add, AdamW);
//   training: the 20 losses of `story` within 2e-2 of the CPU's (bf16 weights round the small
//     fp32 differences into whole bf16 steps now and then, so runs drift apart slowly).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "tests/support/adamw_step.h"
#include "tests/support/gradcheck.h"
#include "trainer/data/bpe_tokenizer.h"
#include "trainer/data/story_corpus.h"
#include "trainer/device.h"
#include "trainer/model/model.h"
#include "trainer/ops/bf16.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/step_runner.h"
#include "trainer/train/trainer.h"

using namespace onegpu::trainer;

namespace {

constexpr double kOrderRel = 1e-4, kOrderAbs = 1e-6;

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float scale = 1.f) {
  Rng r(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = (float)(scale * (2.0 * r.uniform() - 1.0));
  return v;
}

::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                                     double abs, const char* what) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double tol = abs + rel * std::fabs((double)want[i]);
    if (!(std::fabs((double)got[i] - want[i]) <= tol))
      return ::testing::AssertionFailure() << what << "[" << i << "]: GPU " << got[i] << " vs CPU " << want[i]
                                           << " (tol " << tol << ")";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult all_equal(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], 4) != 0)
      return ::testing::AssertionFailure() << what << "[" << i << "]: GPU " << got[i] << " vs CPU " << want[i]
                                           << " (bits differ)";
  return ::testing::AssertionSuccess();
}

// Each test gets a CPU backend and, where a GPU exists, a CUDA backend whose tracker hands out
// device memory. dev() copies host numbers into a device buffer, host() reads one back.
class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    DeviceInfo d = probe_devices();
    if (!d.cuda_built) GTEST_SKIP() << "no CUDA device: this build has no CUDA backend";
    if (d.cuda_devices == 0) GTEST_SKIP() << "no CUDA device: " << d.note;
    gpu_ = make_device_backend(gmt_);
  }
  template <class T>
  Buffer<T> dev(const std::vector<T>& h) {
    Buffer<T> b(gmt_, MemCategory::Activations, h.size(), false);
    gpu_->sync();  // the block may have been used by an op still queued
    if (!h.empty()) std::memcpy(b.data(), h.data(), h.size() * sizeof(T));
    return b;
  }
  template <class T>
  std::vector<T> host(const Buffer<T>& b) {
    gpu_->sync();
    return std::vector<T>(b.begin(), b.end());
  }
  MemoryTracker cmt_;
  CpuBackend cpu_{cmt_, 1};
  MemoryTracker gmt_;
  std::unique_ptr<Backend> gpu_;
};

}  // namespace

// ---- ops ---------------------------------------------------------------------------------------

TEST_F(Cuda, MatmulAllLayoutsAndAccumulate) {
  for (int M : {1, 7, 37})
    for (int K : {1, 16, 29})
      for (int N : {1, 13, 45})
        for (int mode = 0; mode < 6; ++mode) {
          const bool tA = mode == 1 || mode == 4, tB = mode == 2 || mode == 5, acc = mode >= 3;
          auto A = random_floats((std::size_t)M * K, 1 + M + K), B = random_floats((std::size_t)K * N, 2 + K + N);
          auto C = random_floats((std::size_t)M * N, 3 + M + N);
          std::vector<float> want = C;
          cpu_.matmul(A.data(), B.data(), want.data(), M, K, N, tA, tB, acc);
          auto dA = dev(A), dB = dev(B), dC = dev(C);
          gpu_->matmul(dA.data(), dB.data(), dC.data(), M, K, N, tA, tB, acc);
          ASSERT_TRUE(all_close(host(dC), want, 0.0, 1e-5 * K + 1e-6, "matmul"))
              << "M=" << M << " K=" << K << " N=" << N << " transA=" << tA << " transB=" << tB << " acc=" << acc;
        }
}

TEST_F(Cuda, RmsNormForwardAndBackward) {
  const int T = 23, D = 300;
  auto x = random_floats((std::size_t)T * D, 4, 3.f), g = random_floats(D, 5), dy = random_floats((std::size_t)T * D, 6);
  auto dg0 = random_floats(D, 7);
  std::vector<float> y(T * D), r(T), dx(T * D), dg = dg0;
  cpu_.rmsnorm_forward(x.data(), g.data(), y.data(), r.data(), T, D, 1e-5f);
  cpu_.rmsnorm_backward(x.data(), g.data(), r.data(), dy.data(), dx.data(), dg.data(), T, D);
  auto dx_ = dev(x), dg_ = dev(g), ddy = dev(dy), ddg = dev(dg0);
  auto dy_out = dev(std::vector<float>(T * D)), dr = dev(std::vector<float>(T)), ddx = dev(std::vector<float>(T * D));
  gpu_->rmsnorm_forward(dx_.data(), dg_.data(), dy_out.data(), dr.data(), T, D, 1e-5f);
  gpu_->rmsnorm_backward(dx_.data(), dg_.data(), dr.data(), ddy.data(), ddx.data(), ddg.data(), T, D);
  EXPECT_TRUE(all_close(host(dy_out), y, kOrderRel, kOrderAbs, "y"));
  EXPECT_TRUE(all_close(host(dr), r, kOrderRel, kOrderAbs, "rstd"));
  EXPECT_TRUE(all_close(host(ddx), dx, kOrderRel, 1e-5, "dx"));
  EXPECT_TRUE(all_close(host(ddg), dg, kOrderRel, 1e-5, "dg"));
}

// MatmulMath::bf16: both inputs rounded to bf16 (as float_to_bf16 rounds), then multiplied with
// fp32 accumulation: the CPU's product of the rounded inputs, to the matmul's order tolerance.
TEST_F(Cuda, MatmulWithBf16InputsIsTheProductOfTheRoundedInputs) {
  MemoryTracker bmt;
  auto bf16 = make_device_backend(bmt, MatmulMath::bf16);
  EXPECT_EQ(bf16->name(), "cuda-bf16");
  auto round = [](std::vector<float> v) {
    for (auto& x : v) x = bf16_to_float(float_to_bf16(x));
    return v;
  };
  for (int mode = 0; mode < 6; ++mode) {
    const int M = 37, K = 64, N = 45;
    const bool tA = mode == 1 || mode == 4, tB = mode == 2 || mode == 5, acc = mode >= 3;
    auto A = random_floats((std::size_t)M * K, 11 + mode), B = random_floats((std::size_t)K * N, 12 + mode);
    auto C = random_floats((std::size_t)M * N, 13);
    std::vector<float> want = C, unrounded = C;
    cpu_.matmul(round(A).data(), round(B).data(), want.data(), M, K, N, tA, tB, acc);
    cpu_.matmul(A.data(), B.data(), unrounded.data(), M, K, N, tA, tB, acc);
    auto dA = dev(A), dB = dev(B), dC = dev(C);
    bf16->matmul(dA.data(), dB.data(), dC.data(), M, K, N, tA, tB, acc);
    bf16->sync();
    const auto got = host(dC);
    ASSERT_TRUE(all_close(got, want, 0.0, 1e-5 * K + 1e-6, "bf16 matmul")) << "transA=" << tA << " transB=" << tB << " acc=" << acc;
    // The rounding is really there: some result is off the fp32 product by more than fp32's order.
    double most = 0;
    for (std::size_t i = 0; i < got.size(); ++i) most = std::max(most, std::fabs((double)got[i] - unrounded[i]));
    EXPECT_GT(most, 1e-5 * K + 1e-6);
  }
}

TEST_F(Cuda, RopeForwardAndInverse) {
  const int B = 2, S = 9, H = 3, dh = 8, T = B * S;
  auto qkv = random_floats((std::size_t)T * 3 * H * dh, 8);
  for (bool inverse : {false, true}) {
    std::vector<float> want = qkv;
    cpu_.rope(want.data(), T, S, H, dh, inverse);
    auto d = dev(qkv);
    gpu_->rope(d.data(), T, S, H, dh, inverse);
    EXPECT_TRUE(all_close(host(d), want, 1e-6, 1e-7, inverse ? "rope inverse" : "rope"));
  }
}

TEST_F(Cuda, AttentionForwardAndBackward) {
  struct Shape { int B, S, H, dh; };
  for (Shape s : {Shape{2, 17, 3, 8}, Shape{1, 64, 4, 16}, Shape{2, 130, 2, 32}}) {
    const int T = s.B * s.S, D = s.H * s.dh;
    auto qkv = random_floats((std::size_t)T * 3 * D, 9 + s.S), dout = random_floats((std::size_t)T * D, 10 + s.S);
    std::vector<float> out(T * D), probs((std::size_t)s.B * s.H * s.S * s.S), dqkv((std::size_t)T * 3 * D);
    cpu_.attention_forward(qkv.data(), out.data(), probs.data(), s.B, s.S, s.H, s.dh);
    cpu_.attention_backward(qkv.data(), probs.data(), dout.data(), dqkv.data(), s.B, s.S, s.H, s.dh);
    auto dq = dev(qkv), ddo = dev(dout), dout_ = dev(std::vector<float>(T * D));
    auto dp = dev(std::vector<float>(probs.size())), ddq = dev(std::vector<float>(dqkv.size()));
    gpu_->attention_forward(dq.data(), dout_.data(), dp.data(), s.B, s.S, s.H, s.dh);
    gpu_->attention_backward(dq.data(), dp.data(), ddo.data(), ddq.data(), s.B, s.S, s.H, s.dh);
    EXPECT_TRUE(all_close(host(dout_), out, kOrderRel, 1e-6, "attention out")) << "S=" << s.S;
    EXPECT_TRUE(all_close(host(dp), probs, kOrderRel, 1e-7, "attention probs")) << "S=" << s.S;
    EXPECT_TRUE(all_close(host(ddq), dqkv, kOrderRel, 1e-5, "attention dqkv")) << "S=" << s.S;
  }
}

TEST_F(Cuda, SoftmaxRowsAndSilu) {
  const int T = 31, N = 70;
  auto x = random_floats((std::size_t)T * N, 11, 8.f), da = random_floats((std::size_t)T * N, 12);
  std::vector<float> y(T * N), a(T * N), du(T * N);
  cpu_.softmax_rows(x.data(), y.data(), T, N);
  cpu_.silu_forward(x.data(), a.data(), (long)T * N);
  cpu_.silu_backward(x.data(), da.data(), du.data(), (long)T * N);
  auto dx = dev(x), dda = dev(da), dy = dev(std::vector<float>(T * N)), d_a = dev(std::vector<float>(T * N));
  auto ddu = dev(std::vector<float>(T * N));
  gpu_->softmax_rows(dx.data(), dy.data(), T, N);
  gpu_->silu_forward(dx.data(), d_a.data(), (long)T * N);
  gpu_->silu_backward(dx.data(), dda.data(), ddu.data(), (long)T * N);
  EXPECT_TRUE(all_close(host(dy), y, kOrderRel, kOrderAbs, "softmax"));
  EXPECT_TRUE(all_close(host(d_a), a, kOrderRel, kOrderAbs, "silu"));
  EXPECT_TRUE(all_close(host(ddu), du, kOrderRel, kOrderAbs, "silu backward"));
}

TEST_F(Cuda, CrossEntropyLossGradientAndIgnoredRows) {
  const int T = 19, V = 1003;
  auto logits = random_floats((std::size_t)T * V, 13, 5.f);
  std::vector<std::int32_t> tg(T);
  Rng r(14);
  for (auto& t : tg) t = (std::int32_t)(r.next() % V);
  tg[3] = -1;
  tg[11] = -1;
  std::vector<float> dl(T * V);
  const double want = cpu_.cross_entropy(logits.data(), tg.data(), dl.data(), T, V, 0.25f);
  auto dlog = dev(logits), ddl = dev(std::vector<float>(T * V));
  auto dtg = dev(tg);
  // Targets on the device, and in plain host memory (a Batch's vector): both must work.
  const double got_dev = gpu_->cross_entropy(dlog.data(), dtg.data(), ddl.data(), T, V, 0.25f);
  EXPECT_NEAR(got_dev, want, 1e-6 * std::fabs(want));
  EXPECT_TRUE(all_close(host(ddl), dl, kOrderRel, 1e-8, "dlogits"));
  const double got_host = gpu_->cross_entropy(dlog.data(), tg.data(), nullptr, T, V, 0.f);
  EXPECT_NEAR(got_host, want, 1e-6 * std::fabs(want));
  tg[0] = V;  // the CPU refuses a target outside the vocabulary; so does the GPU, for host targets
  EXPECT_THROW(gpu_->cross_entropy(dlog.data(), tg.data(), nullptr, T, V, 0.f), Error);
}

TEST_F(Cuda, EmbeddingGatherScatterAddAreExact) {
  const int V = 11, D = 37, T = 29;
  auto table = random_floats((std::size_t)V * D, 15), dout = random_floats((std::size_t)T * D, 16);
  auto w = random_floats(T, 17);
  std::vector<std::int32_t> tok(T);
  Rng r(18);
  for (auto& t : tok) t = (std::int32_t)(r.next() % V);  // repeats: order of additions matters
  std::vector<float> out(T * D), dtable = random_floats((std::size_t)V * D, 19), dtable0 = dtable;
  std::vector<float> sc = dtable;
  cpu_.embedding_forward(table.data(), tok.data(), out.data(), T, D);
  cpu_.embedding_backward(tok.data(), dout.data(), dtable.data(), T, D);
  cpu_.scatter_add_rows(dout.data(), tok.data(), w.data(), sc.data(), T, D);
  std::vector<float> gathered(T * D);
  cpu_.gather_rows(table.data(), tok.data(), gathered.data(), T, D);

  auto dt = dev(table), ddo = dev(dout);
  auto dtok = dev(tok);
  auto dout_ = dev(std::vector<float>(T * D)), ddt = dev(dtable0), dsc = dev(dtable0), dg = dev(std::vector<float>(T * D));
  gpu_->embedding_forward(dt.data(), tok.data(), dout_.data(), T, D);  // host tokens
  gpu_->embedding_backward(dtok.data(), ddo.data(), ddt.data(), T, D);
  gpu_->scatter_add_rows(ddo.data(), dtok.data(), w.data(), dsc.data(), T, D);  // host weights
  gpu_->gather_rows(dt.data(), dtok.data(), dg.data(), T, D);
  EXPECT_TRUE(all_equal(host(dout_), out, "embedding forward"));
  EXPECT_TRUE(all_equal(host(ddt), dtable, "embedding backward"));
  EXPECT_TRUE(all_equal(host(dsc), sc, "scatter_add_rows"));
  EXPECT_TRUE(all_equal(host(dg), gathered, "gather_rows"));
}

TEST_F(Cuda, MoeCombineAndDispatchBackward) {
  const int T = 13, k = 2, n = T * k, D = 40;
  // A permutation of the slots as the router's counting sort would make it.
  std::vector<std::int32_t> order(n), token_of_row(n), row_of_slot(n);
  for (int i = 0; i < n; ++i) order[i] = (i * 7) % n;  // 7 is prime to 26
  for (int row = 0; row < n; ++row) {
    token_of_row[row] = order[row] / k;
    row_of_slot[order[row]] = row;
  }
  auto y = random_floats((std::size_t)n * D, 30), dout = random_floats((std::size_t)T * D, 31);
  auto gate = random_floats(n, 32), dxe = random_floats((std::size_t)n * D, 33), dh0 = random_floats((std::size_t)T * D, 34);
  std::vector<float> dy(n * D), dgate(n), dh = dh0;
  cpu_.combine_backward(y.data(), dout.data(), order.data(), token_of_row.data(), gate.data(), dy.data(), dgate.data(),
                        n, D);
  cpu_.dispatch_backward(dxe.data(), row_of_slot.data(), dh.data(), T, k, D);
  auto dy_ = dev(y), ddo = dev(dout), dg = dev(gate), ddx = dev(dxe), ddh = dev(dh0);
  auto dord = dev(order), dtor = dev(token_of_row), dros = dev(row_of_slot);
  auto ddy = dev(std::vector<float>(n * D)), ddgate = dev(std::vector<float>(n));
  gpu_->combine_backward(dy_.data(), ddo.data(), dord.data(), dtor.data(), dg.data(), ddy.data(), ddgate.data(), n, D);
  gpu_->dispatch_backward(ddx.data(), dros.data(), ddh.data(), T, k, D);
  EXPECT_TRUE(all_equal(host(ddy), dy, "combine backward dy"));
  EXPECT_TRUE(all_close(host(ddgate), dgate, kOrderRel, 1e-6, "combine backward dgate"));
  EXPECT_TRUE(all_equal(host(ddh), dh, "dispatch backward"));
}

TEST_F(Cuda, AddCopyZeroBf16AreExact) {
  const long n = 100003;
  auto a = random_floats(n, 20), y = random_floats(n, 21);
  std::vector<bf16> h(n);
  for (long i = 0; i < n; ++i) h[i] = float_to_bf16(a[i] * 100.f);
  std::vector<float> sum = y, wide(n);
  cpu_.add(a.data(), sum.data(), n);
  cpu_.bf16_to_f32(h.data(), wide.data(), n);
  auto da = dev(a), dy = dev(y), dw = dev(std::vector<float>(n)), dc = dev(std::vector<float>(n));
  auto dh = dev(h);
  gpu_->add(da.data(), dy.data(), n);
  gpu_->bf16_to_f32(dh.data(), dw.data(), n);
  gpu_->copy(da.data(), dc.data(), n);
  EXPECT_TRUE(all_equal(host(dy), sum, "add"));
  EXPECT_TRUE(all_equal(host(dw), wide, "bf16_to_f32"));
  EXPECT_TRUE(all_equal(host(dc), a, "copy"));
  gpu_->zero(dc.data(), n);
  EXPECT_TRUE(all_equal(host(dc), std::vector<float>(n), "zero"));
}

TEST_F(Cuda, SumSquaresAndAdamW) {
  const long n = 300007;
  auto g = random_floats(n, 22), w = random_floats(n, 23), m = random_floats(n, 24, 0.1f), v = random_floats(n, 25, 0.1f);
  for (auto& x : v) x = std::fabs(x);
  const double want = cpu_.sum_squares(g.data(), n);
  const AdamWStep s = ::onegpu::test::sample_adamw_step();
  std::vector<float> w1 = w, m1 = m, v1 = v;
  std::vector<bf16> wb(n), wb_gpu;
  cpu_.adamw(s, w1.data(), m1.data(), v1.data(), g.data(), wb.data(), n, 0.1f);
  auto dg = dev(g), dw = dev(w), dm = dev(m), dv = dev(v);
  auto dwb = dev(std::vector<bf16>(n));
  EXPECT_NEAR(gpu_->sum_squares(dg.data(), n), want, 1e-10 * want);  // double sums, another order
  gpu_->adamw(s, dw.data(), dm.data(), dv.data(), dg.data(), dwb.data(), n, 0.1f);
  EXPECT_TRUE(all_equal(host(dw), w1, "adamw master"));
  EXPECT_TRUE(all_equal(host(dm), m1, "adamw m"));
  EXPECT_TRUE(all_equal(host(dv), v1, "adamw v"));
  wb_gpu = host(dwb);
  EXPECT_EQ(std::memcmp(wb_gpu.data(), wb.data(), n * sizeof(bf16)), 0) << "adamw bf16 weights";
}

// ---- the model --------------------------------------------------------------------------------

namespace {
ModelConfig tiny() {  // tests/trainer/model/model_test.cpp's gradient-check model
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
  c.aux_loss_coef = 0.1f;
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
  b.targets[1] = -1;
  return b;
}
}  // namespace

TEST_F(Cuda, GradientCheckOnTheGpu) {
  using onegpu::trainer::test::grads_close;
  using onegpu::trainer::test::numeric_grad;
  ModelConfig c = tiny();
  Model m(c, *gpu_, gmt_, 3);
  m.set_exact(true);
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
    m.forward(s, b);  // ends in cross_entropy, which waits for the device
    return sc.ce_scale * s.ce_sum + sc.aux_scale * s.aux_sum;
  };
  gpu_->sync();
  P.zero_grads();
  m.forward_backward(st, b, sc);
  gpu_->sync();
  std::vector<float> analytic(P.grads.begin(), P.grads.end());
  for (const auto& t : P.tensors())
    for (std::int64_t i = 0; i < t.size(); ++i) {
      const std::int64_t j = t.offset + i;
      const double num = numeric_grad(&P.master[j], 1e-2, objective);
      ASSERT_TRUE(grads_close(analytic[j], num, t.name + "[" + std::to_string(i) + "]"));
    }
}

TEST_F(Cuda, ModelStepMatchesTheCpu) {
  ModelConfig c = tiny();
  c.d_model = 32;
  c.expert_hidden = 24;
  c.seq_len = 12;
  Model mc(c, cpu_, cmt_, 9), mg(c, *gpu_, gmt_, 9);
  Batch b = random_batch(c, 3, 8);
  MicrobatchState sc_, sg;
  mc.params().zero_grads();
  gpu_->sync();
  mg.params().zero_grads();
  mc.forward_backward(sc_, b, {0.1f, 1.f});
  mg.forward_backward(sg, b, {0.1f, 1.f});
  gpu_->sync();
  EXPECT_NEAR(sg.ce_sum, sc_.ce_sum, 1e-5 * std::fabs(sc_.ce_sum));
  EXPECT_NEAR(sg.aux_sum, sc_.aux_sum, 1e-5 * std::fabs(sc_.aux_sum) + 1e-7);
  std::vector<float> gc(mc.params().grads.begin(), mc.params().grads.end());
  std::vector<float> gg(mg.params().grads.begin(), mg.params().grads.end());
  EXPECT_TRUE(all_close(gg, gc, 1e-3, 1e-5, "gradients"));
  // Memory by category, measured on the device as on the CPU: 18 bytes a weight.
  const std::int64_t n = mg.params().count();
  EXPECT_EQ(gmt_.current(MemCategory::Weights), 2 * n);
  EXPECT_EQ(gmt_.current(MemCategory::Gradients), 4 * n);
  EXPECT_EQ(gmt_.current(MemCategory::Optimizer), 12 * n);
}

TEST_F(Cuda, TwentyStepsOfStoryFollowTheCpu) {
  StoryCorpusOptions co;
  co.target_bytes = 120 << 10;
  Corpus corpus = generate_story_corpus(co);
  BpeTokenizer tok = BpeTokenizer::train(corpus.train, {400, 2});
  TrainOptions o;
  o.steps = 20;
  o.batch = 4;
  o.seed = 5;
  Trainer cpu(model_preset("story"), o, tok, corpus);
  o.device = "cuda";
  Trainer gpu(model_preset("story"), o, tok, corpus);
  for (int s = 0; s < 20; ++s) {
    const StepResult a = cpu.step(), b = gpu.step();
    EXPECT_NEAR(b.loss, a.loss, 2e-2) << "step " << s;
    EXPECT_NEAR(b.grad_norm, a.grad_norm, 2e-2 * a.grad_norm + 1e-3) << "step " << s;
    EXPECT_EQ(b.memory.current[(int)MemCategory::Weights], a.memory.current[(int)MemCategory::Weights]);
  }
  EXPECT_NEAR(gpu.heldout_loss(), cpu.heldout_loss(), 3e-2);
}

// A step taken piece by piece (the pictures' by-hand mode) is the free step, bit for bit, on the
// GPU too: the kernels are deterministic and run in the same order.
TEST_F(Cuda, ByHandStepEqualsFreeStep) {
  StoryCorpusOptions co;
  co.target_bytes = 120 << 10;
  Corpus corpus = generate_story_corpus(co);
  BpeTokenizer tok = BpeTokenizer::train(corpus.train, {400, 2});
  ModelConfig mc = model_preset("story");
  mc.seq_len = 16;
  TrainOptions o;
  o.steps = 3;
  o.batch = 4;
  o.microbatches = 2;
  o.seed = 5;
  o.device = "cuda";
  Trainer free_run(mc, o, tok, corpus), by_hand(mc, o, tok, corpus);
  for (int s = 0; s < 3; ++s) {
    const StepResult a = free_run.step();
    StepRunner r(by_hand);
    while (!r.done()) r.run_next();
    EXPECT_EQ(r.result().loss, a.loss) << "step " << s;
    EXPECT_EQ(r.result().grad_norm, a.grad_norm) << "step " << s;
  }
  const auto& wa = free_run.model().params().master;
  const auto& wb = by_hand.model().params().master;
  ASSERT_EQ(wa.size(), wb.size());
  EXPECT_EQ(std::memcmp(wa.data(), wb.data(), wa.size() * sizeof(float)), 0);
}

