// The full-size figures (trainer/memory/full_size.h) pinned to values worked out by hand; the
// arithmetic is written beside each one. d = 8,192, F = 35,328, V = 131,072, 32 layers, 64
// experts, top-2, texts of S = 4,096 tokens; GPU 1 is rank 0: stage 1 of 8 (layers 1-4, the
// embedding), experts 1-8 of every layer, dp index 0 of 64, expert copy 0 of 8.
#include <gtest/gtest.h>

#include "trainer/error.h"
#include "trainer/memory/full_size.h"

namespace onegpu::trainer {
namespace {

TEST(FullSize, ModelHas1Point2TrillionWeights) {
  const ModelConfig m = full_size_model();
  // A model only: no machine here holds its 21.5 TB, and validate() (limits.h) says so.
  EXPECT_THROW(m.validate(), Error);
  // A layer: attention 4d² = 268,435,456, norms 2d = 16,384, router 64d = 524,288
  //   -> dense 268,976,128; an expert 2dF = 578,813,952, 64 of them 37,044,092,928.
  // 32 layers: 32 × 37,313,069,056 = 1,194,018,209,792; embedding Vd = 1,073,741,824; final
  // norm and head d + dV = 1,073,750,016.
  EXPECT_EQ(param_breakdown(m).total(), 1'196'165'701'632);
  // Active per token: 32 × (268,976,128 + 2 × 578,813,952) + 1,073,750,016.
  EXPECT_EQ(active_params(m), 46'725'079'040);
}

TEST(FullSize, GpuOneShareByCategory) {
  const ShareFigures f = share_figures(full_size_model(), full_size_split(), 0, full_size_storage(), h100());
  EXPECT_EQ(f.model_bytes, 21'530'982'629'376);  // 18 × 1,196,165,701,632: 21.5 TB
  const RankFootprint& z0 = f.zero[0];
  // Dense: 4 layers × 268,976,128 + embedding 1,073,741,824 = 2,149,646,336.
  EXPECT_EQ(z0.dense_params, 2'149'646'336);
  // Experts: 4 layers × 8 experts × 578,813,952 = 18,522,046,464.
  EXPECT_EQ(z0.expert_params, 18'522'046'464);
  // Weights 2 B, gradients 4 B, optimizer 12 B of 20,671,692,800.
  EXPECT_EQ(z0[MemCategory::Weights], 41'343'385'600);
  EXPECT_EQ(z0[MemCategory::Gradients], 82'686'771'200);
  EXPECT_EQ(z0[MemCategory::Optimizer], 248'060'313'600);
  EXPECT_EQ(z0.params_bytes(), 372'090'470'400);  // 18 × 20,671,692,800: 372 GB
  // ZeRO-1: optimizer over the copies, dense /64 = 33,588,224, experts /8 = 2,315,255,808;
  // 12 × 2,348,844,032 = 28,186,128,384, plus 6 × 20,671,692,800 = 124,030,156,800.
  EXPECT_EQ(f.zero[1][MemCategory::Optimizer], 28'186'128'384);
  EXPECT_EQ(f.zero[1].params_bytes(), 152'216'285'184);
  // ZeRO-2: 2 × 20,671,692,800 + 16 × 2,348,844,032; ZeRO-3: 18 × 2,348,844,032.
  EXPECT_EQ(f.zero[2].params_bytes(), 78'924'890'112);
  EXPECT_EQ(f.zero[3].params_bytes(), 42'279'192'576);
  // Activations, bf16 (2 B) with attention recomputed, T = 4,096 tokens a microbatch. A layer
  // keeps 8Td + 2T + 2TE + Tk + 2Tkd + 2TkF = 268,435,456 + 8,192 + 524,288 + 8,192
  // + 134,217,728 + 578,813,952 = 982,007,808 values (1,964,015,616 B) + 4 index arrays of
  // Tk int32 (131,072 B) = 1,964,146,688 B. 1F1B stage 1 holds pp = 8 microbatches of 4
  // layers: 62,852,694,016 B; plus one layer's backward working set 2 × (7Td + 2Tkd + 2TkF
  // + TE) = 1,896,349,696 B.
  EXPECT_DOUBLE_EQ(z0.in_flight, 8.0);
  EXPECT_EQ(z0[MemCategory::Activations], 64'749'043'712);
  // Communication: the 1 GB gradient bucket (larger than a send, 2Td = 67 MB, or an
  // all-to-all buffer, 2Tkd = 134 MB).
  EXPECT_EQ(z0[MemCategory::Communication], 1'000'000'000);
  // Totals: parameters + 64,749,043,712 + 1,000,000,000.
  EXPECT_EQ(f.zero[0].total(), 437'839'514'112);
  EXPECT_EQ(f.zero[1].total(), 217'965'328'896);
  EXPECT_EQ(f.zero[2].total(), 144'673'933'824);
  EXPECT_EQ(f.zero[3].total(), 108'028'236'288);
  // With recomputation: 8 × 4 layers × 2Td = 2,147,483,648 kept, the working set plus one
  // layer's full activations 1,896,349,696 + 1,964,146,688: 6,007,980,032 in all.
  EXPECT_EQ(f.zero_recompute[3].total(), 42'279'192'576 + 6'007'980'032 + 1'000'000'000);
  EXPECT_EQ(f.zero_recompute[2].total(), 78'924'890'112 + 6'007'980'032 + 1'000'000'000);
}

TEST(FullSize, WhatFitsWhere) {
  const ShareFigures f = share_figures(full_size_model(), full_size_split(), 0, full_size_storage(), h100());
  // 141 GB: ZeRO-2 needs 144.7 GB, ZeRO-3 108.0 GB. 80 GB: ZeRO-3 alone 108.0 GB; with
  // recomputation ZeRO-2 85.9 GB, ZeRO-3 49.3 GB.
  EXPECT_EQ(what_fits(f, h200()), "ZeRO-3");
  EXPECT_EQ(what_fits(f, h100()), "ZeRO-3 + recomputation");
  GpuModel tiny{"tiny", 1'000'000'000, 1e12};
  EXPECT_EQ(what_fits(f, tiny), "");
}

TEST(FullSize, StepTimeAndCollectives) {
  const ShareFigures f = share_figures(full_size_model(), full_size_split(), 0, full_size_storage(), h100(), 0.4);
  // Tokens: 64 copies × 16 microbatches × 4,096 = 4,194,304.
  EXPECT_EQ(f.tokens_per_step, 4'194'304);
  // Per token 6 × 46,725,079,040 + 12 × 32 × 8,192 × 4,096 = 280,350,474,240 + 12,884,901,888
  // = 293,235,376,128; × 4,194,304 = 1.2299e18 FLOPs.
  EXPECT_DOUBLE_EQ(f.flops_per_step, 293'235'376'128.0 * 4'194'304.0);
  // Over 512 × 989e12 × 0.4 = 2.0255e17 FLOP/s: 6.07 s.
  EXPECT_NEAR(f.step_seconds, 6.0723, 1e-3);
  // Dense gradients all-reduced over 64 copies (across machines: InfiniBand), fp32:
  // buffer 4 × 2,149,646,336 = 8,598,585,344; each member sends 2 × 63/64 of it.
  const CollectiveFigure& ar = f.collectives.at(0);
  EXPECT_EQ(ar.members, 64);
  EXPECT_EQ(ar.link, "ib");
  EXPECT_EQ(ar.buffer_bytes, 8'598'585'344);
  EXPECT_EQ(ar.sent_bytes, 2 * 63 * (8'598'585'344 / 64));
  // Ring on 50 GB/s, 5 µs a hop: 2 × (63 × 5e-6 + 63/64 × 8,598,585,344 / 50e9) = 0.3392 s.
  EXPECT_NEAR(ar.seconds, 2 * (63 * 5e-6 + 63.0 / 64 * 8'598'585'344 / 50e9), 1e-9);
  // ZeRO-1 moves the gradients once (reduce-scatter, fp32) and the weights once (all-gather,
  // bf16): 3/4 of the all-reduce's bytes.
  const CollectiveFigure& rs = f.collectives.at(2);
  const CollectiveFigure& ag = f.collectives.at(3);
  EXPECT_EQ(rs.sent_bytes + ag.sent_bytes, 63 * (8'598'585'344 / 64) + 63 * (4'299'292'672 / 64));
  // The 8 ranks sharing an expert sit on 8 machines: InfiniBand too.
  EXPECT_EQ(f.collectives.at(1).members, 8);
  EXPECT_EQ(f.collectives.at(1).link, "ib");
  // Tokens to experts stay in the machine: NVLink, 4 × 4 layers × 16 microbatches calls of
  // 2 × 4,096 × 2 × 8,192 = 134,217,728 B.
  const CollectiveFigure& a2a = f.collectives.at(6);
  EXPECT_EQ(a2a.link, "nvlink");
  EXPECT_EQ(a2a.calls, 256);
  EXPECT_EQ(a2a.buffer_bytes, 134'217'728);
}

}  // namespace
}  // namespace onegpu::trainer
