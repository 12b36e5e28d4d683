// A split run's device path (ParallelOptions::device "cuda": copies, sums and the update through
// the ranks' backends, op costs from the device) checked on the CPU: with a backend that runs
// each op at once but says it is a device (tests/support/timed_cpu_backend.h), the run must give
// bitwise the plain CPU run's losses and weights, and its virtual clock the device's costs.
// tests/trainer/cuda runs the same splits on a real GPU.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/small_story.h"
#include "tests/support/timed_cpu_backend.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::trainer {
namespace {

struct Run {
  std::vector<double> losses;
  std::vector<float> master;
  Timeline last;
  std::vector<Op> ops;
};

Run train(int dp, int ep, int pp, Schedule s, int zero, test::DeviceCalls* calls) {
  const auto& d = test::small_story<16>();
  ParallelOptions o = test::split_options(dp, ep, pp, s, zero);
  if (calls) o.make_backend = [calls](MemoryTracker& t) { return std::make_unique<test::TimedCpuBackend>(t, *calls); };
  ParallelTrainer t(d.model, o, d.train);
  Run r;
  for (int i = 0; i < 3; ++i) r.losses.push_back(t.step().loss);
  r.master = t.master_weights();
  r.last = t.timeline();
  r.ops = t.plan().ops;
  return r;
}

void expect_same(int dp, int ep, int pp, Schedule s, int zero = 0) {
  test::DeviceCalls calls;
  const Run cpu = train(dp, ep, pp, s, zero, nullptr);
  const Run dev = train(dp, ep, pp, s, zero, &calls);
  ASSERT_EQ(cpu.losses.size(), dev.losses.size());
  for (std::size_t i = 0; i < cpu.losses.size(); ++i) EXPECT_EQ(cpu.losses[i], dev.losses[i]) << "step " << i;
  ASSERT_EQ(cpu.master.size(), dev.master.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < cpu.master.size(); ++i) differ += cpu.master[i] != dev.master[i];
  EXPECT_EQ(differ, 0u) << "master weights that differ";
  // Hand-offs went through the backends, ordered by after(); every compute op was marked.
  EXPECT_GT(calls.copies.load(), 0);
  if (dp * pp > 1) { EXPECT_GT(calls.afters.load(), 0); }
  EXPECT_GT(calls.marks.load(), 0);
  // The clock took the device's costs for compute ops (the last step's plan).
  for (const Op& op : dev.ops)
    if (op.is_compute()) {
      EXPECT_DOUBLE_EQ(dev.last.ops[op.id].measured_s, test::TimedCpuBackend::device_cost(op.id));
    }
}

TEST(DevicePath, DataParallelIsBitwiseTheCpu) { expect_same(2, 1, 1, Schedule::OneFOneB); }
TEST(DevicePath, ExpertParallelIsBitwiseTheCpu) { expect_same(2, 2, 1, Schedule::OneFOneB); }
TEST(DevicePath, PipelineIsBitwiseTheCpu) { expect_same(1, 1, 2, Schedule::OneFOneB); }
TEST(DevicePath, ZeroBubbleAllThreeIsBitwiseTheCpu) { expect_same(2, 2, 2, Schedule::ZeroBubbleH1); }
TEST(DevicePath, ZeroOneIsBitwiseTheCpu) { expect_same(2, 1, 1, Schedule::OneFOneB, 1); }

}  // namespace
}  // namespace onegpu::trainer
