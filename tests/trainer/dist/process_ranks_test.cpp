// One process per rank on CPUs: the split run's processes, each running only its own rank's
// program with the collectives and hand-offs over sockets, give bitwise the losses, gradient
// norms and weights of the same split on virtual ranks in one process.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/support/small_story.h"
#include "tests/trainer/dist/processes.h"
#include "trainer/dist/socket_comm.h"
#include "trainer/error.h"
#include "trainer/parallel/parallel_trainer.h"

namespace onegpu::trainer {
namespace {

using test::env;
using test::exit_status;
using test::free_port;
using test::spawn;

constexpr int kSteps = 3;

std::uint64_t digest(const std::vector<float>& v) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* b = reinterpret_cast<const std::uint8_t*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// Per step: loss, aux loss, gradient norm, learning rate, every rank's activation levels
// (how many, and their sum); then the weights' digest.
constexpr std::size_t kPerStep = 6;
std::vector<double> record(ParallelTrainer& t) {
  std::vector<double> out;
  for (int s = 0; s < kSteps; ++s) {
    const ParallelStepResult r = t.step();
    const std::vector<Event> mem = t.memory_events();
    double bytes = 0;
    for (const Event& e : mem) bytes += (double)e.bytes * (e.rank + 1);
    out.insert(out.end(), {r.loss, r.aux_loss, r.grad_norm, (double)r.lr, (double)mem.size(), bytes});
  }
  const std::uint64_t d = digest(t.master_weights());  // a collective across processes
  double bits;
  std::memcpy(&bits, &d, sizeof bits);
  out.push_back(bits);
  return out;
}

// The same split as `world` processes: rank 0's record (every rank's must be the same).
std::vector<double> across_processes(const ParallelOptions& base, int world) {
  const auto& s = onegpu::test::small_story<16>();
  const int port = free_port();
  std::vector<int> fds;
  std::vector<pid_t> kids;
  for (int r = 0; r < world; ++r) {
    int p[2];
    EXPECT_EQ(pipe(p), 0);
    kids.push_back(spawn([&, r, p] {
      ::close(p[0]);
      Rendezvous rv(env(r, world, port), 30.0);
      SocketComm comm(rv, 30.0);
      ParallelOptions o = base;
      o.comm = &comm;
      ParallelTrainer t(s.model, o, s.train);
      const std::vector<double> rec = record(t);
      const std::size_t n = rec.size() * sizeof(double);
      return ::write(p[1], rec.data(), n) == (ssize_t)n;
    }));
    ::close(p[1]);
    fds.push_back(p[0]);
  }
  std::vector<std::vector<double>> recs((std::size_t)world);
  for (int r = 0; r < world; ++r) {
    std::vector<double>& rec = recs[(std::size_t)r];
    rec.resize(kPerStep * kSteps + 1);
    std::size_t got = 0;
    auto* b = reinterpret_cast<char*>(rec.data());
    for (ssize_t k; got < rec.size() * sizeof(double) && (k = ::read(fds[(std::size_t)r], b + got, rec.size() * sizeof(double) - got)) > 0;)
      got += (std::size_t)k;
    ::close(fds[(std::size_t)r]);
    EXPECT_EQ(got, rec.size() * sizeof(double)) << "rank " << r << " wrote no record";
  }
  for (pid_t k : kids) EXPECT_EQ(exit_status(k), 0);
  for (int r = 1; r < world; ++r) EXPECT_EQ(std::memcmp(recs[0].data(), recs[(std::size_t)r].data(), recs[0].size() * sizeof(double)), 0) << "rank " << r;
  return recs[0];
}

std::vector<double> on_virtual_ranks(const ParallelOptions& o) {
  const auto& s = onegpu::test::small_story<16>();
  ParallelTrainer t(s.model, o, s.train);
  return record(t);
}

void expect_bitwise(const std::vector<double>& procs, const std::vector<double>& virt) {
  ASSERT_EQ(procs.size(), virt.size());
  for (std::size_t i = 0; i < virt.size(); ++i)
    EXPECT_EQ(std::memcmp(&procs[i], &virt[i], sizeof(double)), 0)
        << (i + 1 == virt.size() ? "weights" : "step " + std::to_string(i / kPerStep + 1) + " value " + std::to_string(i % kPerStep)) << ": "
        << procs[i] << " vs " << virt[i];
}

TEST(ProcessRanks, DataParallelTwoProcessesMatchVirtualRanksBitwise) {
  (void)onegpu::test::small_story<16>();  // built before the fork, shared by the children
  const ParallelOptions o = onegpu::test::split_options(2, 1, 1, Schedule::OneFOneB);
  const std::vector<double> procs = across_processes(o, 2);
  const std::vector<double> virt = on_virtual_ranks(o);
  expect_bitwise(procs, virt);
  EXPECT_GT(virt[0], virt[kPerStep * (kSteps - 1)]);  // it trains: the loss falls
  EXPECT_GT(virt[4], 0.0);                          // activation levels were recorded
}

// Four members: the order of the all-reduce's sum shows in its rounding (two commute).
TEST(ProcessRanks, DataParallelFourProcessesMatchVirtualRanksBitwise) {
  (void)onegpu::test::small_story<16>();
  const ParallelOptions o = onegpu::test::split_options(4, 1, 1, Schedule::OneFOneB);
  expect_bitwise(across_processes(o, 4), on_virtual_ranks(o));
}

TEST(ProcessRanks, PipelineTwoProcessesMatchVirtualRanksBitwise) {
  (void)onegpu::test::small_story<16>();
  const ParallelOptions o = onegpu::test::split_options(1, 1, 2, Schedule::OneFOneB);
  expect_bitwise(across_processes(o, 2), on_virtual_ranks(o));
}

TEST(ProcessRanks, DataAndPipelineFourProcessesMatchVirtualRanksBitwise) {
  (void)onegpu::test::small_story<16>();
  const ParallelOptions o = onegpu::test::split_options(2, 1, 2, Schedule::OneFOneB);
  expect_bitwise(across_processes(o, 4), on_virtual_ranks(o));
}

// Interleaved stages: two model chunks a rank, hand-offs both ways between the same pair.
TEST(ProcessRanks, InterleavedPipelineTwoProcessesMatchVirtualRanksBitwise) {
  (void)onegpu::test::small_story<16>();
  ParallelOptions o = onegpu::test::split_options(1, 1, 2, Schedule::Interleaved);
  o.vstages = 2;
  expect_bitwise(across_processes(o, 2), on_virtual_ranks(o));
}

// ep 2: each layer's all-to-all (dispatch, combine and back) as grouped sends and receives.
TEST(ProcessRanks, ExpertParallelTwoProcessesMatchVirtualRanksBitwise) {
  (void)onegpu::test::small_story<16>();
  const ParallelOptions o = onegpu::test::split_options(2, 2, 1, Schedule::OneFOneB);
  expect_bitwise(across_processes(o, 2), on_virtual_ranks(o));
}

// All three at once, with ZB-H1's weight-gradient halves run after the hand-offs.
TEST(ProcessRanks, ExpertDataAndPipelineFourProcessesUnderZeroBubbleMatchVirtualRanksBitwise) {
  (void)onegpu::test::small_story<16>();
  const ParallelOptions o = onegpu::test::split_options(2, 2, 2, Schedule::ZeroBubbleH1);
  expect_bitwise(across_processes(o, 4), on_virtual_ranks(o));
}

// A transport of three ranks that never connects: the split's check comes first.
struct NoComm final : Comm {
  int rank() const override { return 0; }
  int world() const override { return 3; }
  void all_reduce_sum(float*, std::int64_t, std::span<const int>) override {}
  void send(const void*, std::size_t, int) override {}
  void recv(void*, std::size_t, int) override {}
  void group(const std::function<void()>& fn) override { fn(); }
};

TEST(ProcessRanks, ASplitOfAnotherWorldIsOneLine) {
  const auto& s = onegpu::test::small_story<16>();
  NoComm c;
  ParallelOptions o = onegpu::test::split_options(2, 1, 1, Schedule::OneFOneB);
  o.comm = &c;
  try {
    ParallelTrainer t(s.model, o, s.train);
    FAIL() << "ran 2 ranks on 3 processes";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "the split has 2 ranks (pp × dp = 1 × 2) but the run has 3 processes");
  }
  o.zero = 1;
  try {
    ParallelTrainer t(s.model, o, s.train);
    FAIL() << "ran ZeRO-1 across processes";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "one process per rank does not run ZeRO-1 yet");
  }
}

}  // namespace
}  // namespace onegpu::trainer
