// Split runs with every rank a virtual rank on one GPU (ParallelOptions::device "cuda": own
// stream each, device-to-device hand-offs, collectives summed in rank order) against the same
// splits on the CPU; op costs from CUDA events; and NCCL at world size 1 (NCCL refuses two
// ranks on one GPU). Each test skips ("no CUDA device: ...") where no GPU is present.
// tests/trainer/parallel/device_path_test.cpp checks the same code path on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/support/small_story.h"
#include "trainer/cuda/nccl_comm.h"
#include "trainer/device.h"
#include "trainer/dist/rendezvous.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::trainer {
namespace {

#define NEED_GPU()                                                                        \
  do {                                                                                    \
    const DeviceInfo d = probe_devices();                                                 \
    if (!d.cuda_built) GTEST_SKIP() << "no CUDA device: this build has no CUDA backend"; \
    if (d.cuda_devices == 0) GTEST_SKIP() << "no CUDA device: " << d.note;              \
  } while (0)

struct SplitRun {
  std::vector<double> losses;
  std::vector<float> master;
  Timeline last;
  std::vector<Op> ops;
  double seconds = 0;
};

SplitRun train(const std::string& device, int dp, int ep, int pp, Schedule s, int zero = 0, int steps = 4) {
  const auto& d = ::onegpu::test::small_story<16>();
  ParallelOptions o = ::onegpu::test::split_options(dp, ep, pp, s, zero);
  o.device = device;
  ParallelTrainer t(d.model, o, d.train);
  SplitRun r;
  for (int i = 0; i < steps; ++i) {
    const ParallelStepResult x = t.step();
    r.losses.push_back(x.loss);
    r.seconds = x.seconds;
  }
  r.master = t.master_weights();
  r.last = t.timeline();
  r.ops = t.plan().ops;
  return r;
}

// The GPU's kernels add in other orders than the CPU's (cuda_backend.h): losses stay within
// the tolerance the one-rank GPU test states for story (2e-2 absolute over a few steps).
void follows_the_cpu(int dp, int ep, int pp, Schedule s, int zero = 0) {
  const SplitRun cpu = train("cpu", dp, ep, pp, s, zero), gpu = train("cuda", dp, ep, pp, s, zero);
  for (std::size_t i = 0; i < cpu.losses.size(); ++i) EXPECT_NEAR(gpu.losses[i], cpu.losses[i], 2e-2) << "step " << i;
}

TEST(CudaVirtualRanks, DataParallelFollowsTheCpu) {
  NEED_GPU();
  follows_the_cpu(2, 1, 1, Schedule::OneFOneB);
}
TEST(CudaVirtualRanks, ExpertParallelFollowsTheCpu) {
  NEED_GPU();
  follows_the_cpu(2, 2, 1, Schedule::OneFOneB);
}
TEST(CudaVirtualRanks, AllThreeWithZeroBubbleFollowTheCpu) {
  NEED_GPU();
  follows_the_cpu(2, 2, 2, Schedule::ZeroBubbleH1);
}
TEST(CudaVirtualRanks, ZeroOneFollowsTheCpu) {
  NEED_GPU();
  follows_the_cpu(2, 1, 1, Schedule::OneFOneB, 1);
}

// A pipeline split runs the same kernels on the same numbers in the same order: on the GPU,
// as on the CPU, it is bitwise one rank; and a split rerun is bitwise itself.
TEST(CudaVirtualRanks, PipelineIsBitwiseOneRankAndRerunsAreBitwise) {
  NEED_GPU();
  const SplitRun one = train("cuda", 1, 1, 1, Schedule::OneFOneB), two = train("cuda", 1, 1, 2, Schedule::OneFOneB);
  EXPECT_EQ(one.losses, two.losses);
  EXPECT_EQ(one.master, two.master);
  const SplitRun a = train("cuda", 2, 2, 2, Schedule::OneFOneB), b = train("cuda", 2, 2, 2, Schedule::OneFOneB);
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_EQ(a.master, b.master);
}

// Compute ops' costs on the virtual clock are CUDA event times: positive, and no longer than the
// whole step's wall time.
TEST(CudaVirtualRanks, OpCostsComeFromCudaEvents) {
  NEED_GPU();
  const SplitRun r = train("cuda", 2, 1, 2, Schedule::OneFOneB, 0, 2);
  int timed = 0;
  for (const Op& op : r.ops)
    if (op.is_compute() && op.kind != OpKind::Update) {
      EXPECT_GT(r.last.ops[op.id].measured_s, 0.0) << describe(op);
      EXPECT_LT(r.last.ops[op.id].measured_s, r.seconds) << describe(op);
      ++timed;
    }
  EXPECT_GT(timed, 0);
}

// NCCL at world size 1 on one GPU: the communicator forms through the rendezvous, an all-reduce
// leaves the numbers as they are, and a grouped send to itself is a copy.
TEST(CudaNccl, WorldOfOne) {
  NEED_GPU();
  MemoryTracker t;
  auto be = make_device_backend(t);
  Rendezvous rv(LaunchEnv{}, 10.0);
  NcclComm comm(rv, 0);
  EXPECT_EQ(comm.world(), 1);
  const int n = 1000;
  Buffer<float> a(t, MemCategory::Activations, n, false), b(t, MemCategory::Activations, n);
  be->sync();
  for (int i = 0; i < n; ++i) a[(std::size_t)i] = 0.5f * (float)i;
  comm.all_reduce_sum(a.data(), n, nullptr);
  comm.group([&] {
    comm.send(a.data(), n * sizeof(float), 0, nullptr);
    comm.recv(b.data(), n * sizeof(float), 0, nullptr);
  });
  // NCCL ran on the legacy stream (nullptr); the backend's stream is a blocking one, so an op
  // queued there now starts after NCCL's work, and sync() waits for both.
  Buffer<float> mark(t, MemCategory::Activations, 1, false);
  be->zero(mark.data(), 1);
  be->sync();
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(a[(std::size_t)i], 0.5f * (float)i);
    ASSERT_EQ(b[(std::size_t)i], 0.5f * (float)i);
  }
}

}  // namespace
}  // namespace onegpu::trainer
