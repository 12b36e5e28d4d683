// Finite-difference checks of every CPU op's backward, plus matmul against a naive reference and
// thread-count invariance. Tolerances: see gradcheck.h (2e-3 absolute + 2e-2 relative, fp32).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "tests/support/gradcheck.h"
#include "trainer/model/params.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/ops/fast_math.h"

using namespace onegpu::trainer;
using onegpu::trainer::test::grads_close;
using onegpu::trainer::test::numeric_grad;

namespace {

std::vector<float> randn(std::size_t n, std::uint64_t seed, float scale = 1.f) {
  Rng r(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = (float)(scale * r.normal());
  return v;
}
double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (double)a[i] * b[i];
  return s;
}
// Checks analytic gradient g of f with respect to every element of x.
void check_grad(std::vector<float>& x, const std::vector<float>& g, const std::function<double()>& f,
                const char* what, double h = 1e-2) {
  ASSERT_EQ(x.size(), g.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    ASSERT_TRUE(grads_close(g[i], numeric_grad(&x[i], h, f), std::string(what) + "[" + std::to_string(i) + "]"));
}

struct Fixture : ::testing::Test {
  MemoryTracker mt;
  CpuBackend be{mt, 1};
};

}  // namespace

TEST_F(Fixture, MatmulMatchesNaiveForAllLayoutsAndTails) {
  // Every row count of a partial tile (1..5 rows left over) and a partial column tile.
  for (int M = 1; M <= 13; ++M) {
  const int K = 5, N = 19;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      if (ta && tb) continue;
      for (int accum = 0; accum < 2; ++accum) {
        auto A = randn(M * K, 1), B = randn(K * N, 2), C = randn(M * N, 3);
        auto ref = C;
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            double s = accum ? C[m * N + n] : 0.0;
            for (int k = 0; k < K; ++k)
              s += (double)(ta ? A[k * M + m] : A[m * K + k]) * (tb ? B[n * K + k] : B[k * N + n]);
            ref[m * N + n] = (float)s;
          }
        be.matmul(A.data(), B.data(), C.data(), M, K, N, ta, tb, accum);
        for (int i = 0; i < M * N; ++i) ASSERT_NEAR(C[i], ref[i], 1e-5) << "M=" << M << ta << tb << accum << " at " << i;
      }
    }
  }
}

TEST_F(Fixture, MatmulIsBitwiseIdenticalOnOneAndTwoThreads) {
  CpuBackend be2(mt, 2);
  const int M = 203, K = 64, N = 130;
  auto A = randn(M * K, 4), B = randn(K * N, 5), At = randn(K * M, 6);
  std::vector<float> c1(M * N), c2(M * N), d1(K * N, 0.f), d2(K * N, 0.f);
  be.matmul(A.data(), B.data(), c1.data(), M, K, N, false, false, false);
  be2.matmul(A.data(), B.data(), c2.data(), M, K, N, false, false, false);
  EXPECT_EQ(0, std::memcmp(c1.data(), c2.data(), c1.size() * 4));
  // weight-gradient layout: reduction over M rows
  be.matmul(A.data(), c1.data(), d1.data(), K, M, N, true, false, true);
  be2.matmul(A.data(), c1.data(), d2.data(), K, M, N, true, false, true);
  EXPECT_EQ(0, std::memcmp(d1.data(), d2.data(), d1.size() * 4));
}

TEST_F(Fixture, MatmulGradients) {
  const int M = 5, K = 6, N = 7;
  auto A = randn(M * K, 7), B = randn(K * N, 8), R = randn(M * N, 9);
  std::vector<float> C(M * N), dA(M * K), dB(K * N, 0.f);
  auto f = [&] {
    be.matmul(A.data(), B.data(), C.data(), M, K, N, false, false, false);
    return dot(C, R);
  };
  be.matmul(R.data(), B.data(), dA.data(), M, N, K, false, true, false);  // dA = R B^T
  be.matmul(A.data(), R.data(), dB.data(), K, M, N, true, false, true);   // dB = A^T R
  check_grad(A, dA, f, "dA");
  check_grad(B, dB, f, "dB");
}

TEST_F(Fixture, RmsNormGradients) {
  const int T = 4, D = 8;
  auto x = randn(T * D, 10), g = randn(D, 11), R = randn(T * D, 12);
  for (auto& v : g) v += 1.f;
  std::vector<float> y(T * D), rstd(T), dx(T * D), dg(D, 0.f);
  auto f = [&] {
    be.rmsnorm_forward(x.data(), g.data(), y.data(), rstd.data(), T, D, 1e-5f);
    return dot(y, R);
  };
  f();
  be.rmsnorm_backward(x.data(), g.data(), rstd.data(), R.data(), dx.data(), dg.data(), T, D);
  check_grad(x, dx, f, "dx");
  check_grad(g, dg, f, "dg");
}

TEST_F(Fixture, RopeGradientIsItsInverseAndKeepsNorms) {
  const int T = 6, S = 3, H = 2, dh = 4, D = H * dh;
  auto qkv = randn(T * 3 * D, 13), R = randn(T * 3 * D, 14);
  auto y = qkv;
  auto f = [&] {
    y = qkv;
    be.rope(y.data(), T, S, H, dh, false);
    return dot(y, R);
  };
  f();
  EXPECT_NEAR(dot(y, y), dot(qkv, qkv), 1e-3);  // a rotation
  auto d = R;
  be.rope(d.data(), T, S, H, dh, true);
  check_grad(qkv, d, f, "dqkv");
}

TEST_F(Fixture, AttentionGradientsAndCausality) {
  // dh 4 takes the generic loops, dh 16 the vector path.
  for (int dh : {4, 16}) {
    const int B = 2, S = 5, H = 2, D = H * dh, T = B * S;
    auto qkv = randn(T * 3 * D, 15 + dh), R = randn(T * D, 16 + dh);
    std::vector<float> out(T * D), probs(B * H * S * S), dqkv(T * 3 * D);
    auto f = [&] {
      be.attention_forward(qkv.data(), out.data(), probs.data(), B, S, H, dh);
      return dot(out, R);
    };
    f();
    be.attention_backward(qkv.data(), probs.data(), R.data(), dqkv.data(), B, S, H, dh);
    check_grad(qkv, dqkv, f, dh == 16 ? "dqkv (dh 16)" : "dqkv (dh 4)");
    // Causal: changing the last token of sequence 0 leaves its earlier outputs unchanged.
    auto before = out;
    for (int c = 0; c < 3 * D; ++c) qkv[(S - 1) * 3 * D + c] += 1.f;
    f();
    for (int t = 0; t < S - 1; ++t)
      for (int d = 0; d < D; ++d) EXPECT_EQ(before[t * D + d], out[t * D + d]);
    EXPECT_NE(before[(S - 1) * D], out[(S - 1) * D]);
  }
}

TEST_F(Fixture, SiluGradient) {
  auto u = randn(20, 17, 2.f), R = randn(20, 18);
  std::vector<float> a(20), du(20);
  auto f = [&] {
    be.silu_forward(u.data(), a.data(), 20);
    return dot(a, R);
  };
  be.silu_backward(u.data(), R.data(), du.data(), 20);
  check_grad(u, du, f, "du");
}

// The vectorised elementwise ops run 16 elements at a time and pad the last group: an element's
// result must not depend on whether it sits in a full group or in the padded tail.
TEST_F(Fixture, SiluGivesEachElementTheSameBitsWhereverItSits) {
  const int n = 37;
  auto u = randn(n, 41, 3.f), g = randn(n, 42);
  std::vector<float> a(n), du(n);
  be.silu_forward(u.data(), a.data(), n);
  be.silu_backward(u.data(), g.data(), du.data(), n);
  for (int len = 1; len <= n; ++len) {
    std::vector<float> a2(len), du2(len);
    be.silu_forward(u.data(), a2.data(), len);
    be.silu_backward(u.data(), g.data(), du2.data(), len);
    ASSERT_EQ(0, std::memcmp(a2.data(), a.data(), 4 * len)) << "prefix " << len;
    ASSERT_EQ(0, std::memcmp(du2.data(), du.data(), 4 * len)) << "prefix " << len;
  }
  for (int i = 0; i < n; ++i) EXPECT_NEAR(a[i], u[i] / (1.0 + std::exp(-(double)u[i])), 1e-6 * (1 + std::fabs(u[i])));
}

TEST_F(Fixture, CrossEntropyMatchesDoublePrecisionOnAnOddVocabulary) {
  const int T = 3, V = 37;  // two full vector groups and a padded tail of 5
  auto l = randn(T * V, 43, 4.f);
  std::vector<std::int32_t> y = {0, 36, 17};
  std::vector<float> dl(T * V);
  double got = be.cross_entropy(l.data(), y.data(), dl.data(), T, V, 0.5f), want = 0;
  for (int t = 0; t < T; ++t) {
    double mx = -1e30, s = 0;
    for (int v = 0; v < V; ++v) mx = std::max(mx, (double)l[t * V + v]);
    for (int v = 0; v < V; ++v) s += std::exp(l[t * V + v] - mx);
    want += std::log(s) + mx - l[t * V + y[t]];
    for (int v = 0; v < V; ++v) {
      double p = std::exp(l[t * V + v] - mx) / s;
      EXPECT_NEAR(dl[t * V + v], 0.5 * (p - (v == y[t])), 1e-6) << t << "," << v;
    }
  }
  EXPECT_NEAR(got, want, 1e-5 * want);
}

TEST_F(Fixture, CrossEntropyGradientAndIgnoredTargets) {
  const int T = 4, V = 9;
  auto l = randn(T * V, 19, 2.f);
  std::vector<std::int32_t> y = {3, -1, 0, 8};
  std::vector<float> dl(T * V);
  auto f = [&] { return be.cross_entropy(l.data(), y.data(), nullptr, T, V, 1.f); };
  double loss = be.cross_entropy(l.data(), y.data(), dl.data(), T, V, 1.f);
  EXPECT_GT(loss, 0.0);
  for (int v = 0; v < V; ++v) EXPECT_EQ(dl[1 * V + v], 0.f);  // ignored row
  check_grad(l, dl, f, "dlogits");
  // Uniform logits: loss = log V per counted row.
  std::vector<float> z(T * V, 0.f);
  EXPECT_NEAR(be.cross_entropy(z.data(), y.data(), nullptr, T, V, 1.f), 3 * std::log(9.0), 1e-5);
}

TEST_F(Fixture, EmbeddingGatherScatter) {
  const int V = 5, D = 3;
  auto table = randn(V * D, 20);
  std::vector<std::int32_t> tok = {4, 1, 4};
  std::vector<float> out(3 * D), dt(V * D, 0.f), dout(3 * D, 1.f);
  be.embedding_forward(table.data(), tok.data(), out.data(), 3, D);
  EXPECT_EQ(out[0], table[4 * D]);
  be.embedding_backward(tok.data(), dout.data(), dt.data(), 3, D);
  EXPECT_EQ(dt[4 * D], 2.f);
  EXPECT_EQ(dt[1 * D], 1.f);
  EXPECT_EQ(dt[0], 0.f);
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.00390625f)), 1.0f);      // halfway: ties to even
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.01171875f)), 1.015625f); // halfway: ties to even (up)
  EXPECT_NEAR(bf16_to_float(float_to_bf16(3.14159f)), 3.14159f, 0.01f);
}

TEST(FastExp, MatchesLibmToAFewUlp) {
  double worst = 0;
  for (float x = -80.f; x < 80.f; x += 0.0137f) {
    double ref = std::exp((double)x), got = fast_exp(x);
    worst = std::max(worst, std::fabs(got - ref) / ref);
  }
  EXPECT_LT(worst, 5e-7);
  EXPECT_EQ(fast_exp(0.f), 1.f);
  EXPECT_GT(fast_exp(-200.f), 0.f);  // clamped, no denormal garbage
  EXPECT_TRUE(std::isfinite(fast_exp(200.f)));
}

TEST(FastExp, EachVectorLaneEqualsTheScalarForm) {
  for (float x0 = -100.f; x0 < 100.f; x0 += 0.77f) {
    v16 x;
    for (int j = 0; j < 16; ++j) x[j] = x0 + 0.031f * j;
    v16 e = fast_exp(x);
    for (int j = 0; j < 16; ++j) ASSERT_EQ(e[j], fast_exp(x[j])) << x[j];
  }
}
