// One process per rank with every rank on a GPU (ParallelOptions::device "cuda" with comm):
//   - two processes sharing one GPU, the ranks' managed memory carried by sockets: bitwise the
//     same split as virtual ranks on that GPU (the per-process path's device syncs, hand-offs,
//     ZeRO-1 and record, with sums in rank order)
//   - NCCL behind the seam (NcclTransport) at world size 1: its collectives, and a one-rank run
//   - two processes on two GPUs over NCCL (CudaTwoGpus: skipped with fewer GPUs): the virtual
//     ranks' losses to rounding (NCCL sums in its own order)
// The ranks are fresh processes of this binary (ProcessChild.Run, told what to do through the
// environment), never forks of a process that has touched CUDA. Each test skips ("no CUDA
// device: ...") where no GPU is present. Ran once on one H200: all but CudaTwoGpus (one GPU).
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/small_story.h"
#include "tests/trainer/dist/processes.h"
#include "trainer/cuda/nccl_comm.h"
#include "trainer/device.h"
#include "trainer/dist/rendezvous.h"
#include "trainer/dist/socket_comm.h"
#include "trainer/parallel/parallel_trainer.h"

extern char** environ;

namespace onegpu::trainer {
namespace {

#define NEED_GPUS(n)                                                                                           \
  do {                                                                                                         \
    const DeviceInfo d = probe_devices();                                                                      \
    if (!d.cuda_built) GTEST_SKIP() << "no CUDA device: this build has no CUDA backend";                      \
    if (d.cuda_devices == 0) GTEST_SKIP() << "no CUDA device: " << d.note;                                   \
    if (d.cuda_devices < (n)) GTEST_SKIP() << "needs " << (n) << " GPUs, this machine has " << d.cuda_devices; \
  } while (0)

constexpr int kSteps = 3;

// What a run leaves: each step's loss and gradient norm, then the master weights.
struct Record {
  std::vector<double> losses, norms;
  std::vector<float> master;
};

ParallelOptions options(int dp, int ep, int pp, int zero) {
  ParallelOptions o = ::onegpu::test::split_options(dp, ep, pp, Schedule::OneFOneB, zero);
  o.device = "cuda";
  return o;
}

Record train_steps(ParallelTrainer& t) {
  Record r;
  for (int s = 0; s < kSteps; ++s) {
    const ParallelStepResult x = t.step();
    r.losses.push_back(x.loss);
    r.norms.push_back(x.grad_norm);
  }
  r.master = t.master_weights();  // a collective across processes
  return r;
}

Record on_virtual_ranks(const ParallelOptions& o) {
  const auto& s = ::onegpu::test::small_story<16>();
  ParallelTrainer t(s.model, o, s.train);
  return train_steps(t);
}

// ---- a rank in a process of its own ----
// ONEGPU_CUDA_CHILD="rank world port transport dp ep pp zero out": transport is "sockets" (the
// ranks share GPU 0, their memory over TCP) or "nccl" (GPU = rank).
TEST(ProcessChild, Run) {
  const char* spec = std::getenv("ONEGPU_CUDA_CHILD");
  if (!spec) GTEST_SKIP() << "a rank of the CudaProcesses tests, started by them";
  int rank = 0, world = 0, port = 0, dp = 0, ep = 0, pp = 0, zero = 0;
  char transport[16] = {}, out[4096] = {};
  ASSERT_EQ(std::sscanf(spec, "%d %d %d %15s %d %d %d %d %4095s", &rank, &world, &port, transport, &dp, &ep, &pp, &zero, out), 9);
  const auto& s = ::onegpu::test::small_story<16>();
  Rendezvous rv(test::env(rank, world, port), 60.0);
  SocketComm sockets(rv, 60.0);
  ParallelOptions o = options(dp, ep, pp, zero);
  o.comm = &sockets;
  std::unique_ptr<Comm> nccl;
  if (std::string(transport) == "nccl") {
    nccl = make_nccl_transport(rv, rank);
    o.cuda_device = rank;
    o.comm = nccl.get();
    o.host_comm = &sockets;
  }
  ParallelTrainer t(s.model, o, s.train);
  const Record r = train_steps(t);
  FILE* f = std::fopen(out, "wb");
  ASSERT_NE(f, nullptr) << out;
  const std::uint64_t n[3] = {r.losses.size(), r.norms.size(), r.master.size()};
  std::fwrite(n, sizeof n, 1, f);
  std::fwrite(r.losses.data(), sizeof(double), r.losses.size(), f);
  std::fwrite(r.norms.data(), sizeof(double), r.norms.size(), f);
  std::fwrite(r.master.data(), sizeof(float), r.master.size(), f);
  ASSERT_EQ(std::fclose(f), 0);
}

// Each rank as a fresh process of this binary; every rank's Record (all must be the same).
std::vector<Record> across_processes(int world, const std::string& transport, int dp, int ep, int pp, int zero) {
  const int port = test::free_port();
  std::vector<pid_t> kids;
  std::vector<std::string> outs;
  char self[4096] = {};
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  EXPECT_GT(len, 0);
  for (int r = 0; r < world; ++r) {
    outs.push_back(::testing::TempDir() + "onegpu_cuda_rank_" + std::to_string(::getpid()) + "_" + std::to_string(r));
    const std::string spec = "ONEGPU_CUDA_CHILD=" + std::to_string(r) + " " + std::to_string(world) + " " + std::to_string(port) +
                             " " + transport + " " + std::to_string(dp) + " " + std::to_string(ep) + " " + std::to_string(pp) +
                             " " + std::to_string(zero) + " " + outs.back();
    std::vector<char*> envp;
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "ONEGPU_CUDA_CHILD=", 18) != 0) envp.push_back(*e);
    std::string spec_copy = spec;
    envp.push_back(spec_copy.data());
    envp.push_back(nullptr);
    std::string filter = "--gtest_filter=ProcessChild.Run", brief = "--gtest_brief=1";
    char* argv[] = {self, filter.data(), brief.data(), nullptr};
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, self, nullptr, nullptr, argv, envp.data()), 0);
    kids.push_back(pid);
  }
  for (pid_t k : kids) EXPECT_EQ(test::exit_status(k), 0) << "a rank failed (its output is above)";
  std::vector<Record> runs;
  for (const std::string& path : outs) {
    Record r;
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      std::uint64_t n[3] = {};
      if (std::fread(n, sizeof n, 1, f) == 1 && n[0] < 1000 && n[1] < 1000 && n[2] < (1u << 30)) {
        r.losses.resize(n[0]);
        r.norms.resize(n[1]);
        r.master.resize(n[2]);
        const bool ok = std::fread(r.losses.data(), sizeof(double), n[0], f) == n[0] &&
                        std::fread(r.norms.data(), sizeof(double), n[1], f) == n[1] &&
                        std::fread(r.master.data(), sizeof(float), n[2], f) == n[2];
        EXPECT_TRUE(ok) << path << " is short";
      }
      std::fclose(f);
      std::remove(path.c_str());
    }
    EXPECT_EQ(r.losses.size(), (std::size_t)kSteps) << path << ": no record";
    runs.push_back(std::move(r));
  }
  return runs;
}

void expect_bitwise(const Record& a, const Record& b, const std::string& what) {
  EXPECT_EQ(a.losses, b.losses) << what;
  EXPECT_EQ(a.norms, b.norms) << what;
  ASSERT_EQ(a.master.size(), b.master.size()) << what;
  EXPECT_EQ(std::memcmp(a.master.data(), b.master.data(), a.master.size() * sizeof(float)), 0) << what << ": weights";
}

// Two processes on one GPU, their ranks' memory carried over sockets: the per-process path on
// device ranks (syncs before each hand-off and collective, host sums in rank order, ZeRO-1's
// pieces, the gathered record) gives bitwise the virtual ranks' numbers on the same GPU.
TEST(CudaProcesses, TwoProcessesOnOneGpuOverSocketsMatchVirtualRanksBitwise) {
  NEED_GPUS(1);
  (void)::onegpu::test::small_story<16>();
  for (const auto& [dp, ep, pp, zero] : std::vector<std::array<int, 4>>{{2, 1, 1, 0}, {2, 2, 1, 1}, {1, 1, 2, 0}}) {
    const std::string what = "dp " + std::to_string(dp) + " ep " + std::to_string(ep) + " pp " + std::to_string(pp) + " zero " + std::to_string(zero);
    const std::vector<Record> procs = across_processes(2, "sockets", dp, ep, pp, zero);
    const Record virt = on_virtual_ranks(options(dp, ep, pp, zero));
    for (const Record& p : procs) expect_bitwise(p, virt, what);
    EXPECT_LT(virt.losses.back(), virt.losses.front()) << what << ": it does not train";
  }
}

// NCCL behind the seam at world size 1: all-reduce and reduce-scatter of one member leave the
// numbers, an all-gather of one piece too, and a send to itself (deferred until the receive)
// arrives even though the sender reuses its buffer at once.
TEST(CudaProcesses, NcclTransportAtWorldSizeOne) {
  NEED_GPUS(1);
  MemoryTracker t;
  auto be = make_device_backend(t);
  Rendezvous rv(LaunchEnv{}, 10.0);
  const std::unique_ptr<Comm> c = make_nccl_transport(rv, 0);
  ASSERT_EQ(c->world(), 1);
  const int n = 1000;
  Buffer<float> a(t, MemCategory::Activations, n, false), b(t, MemCategory::Activations, n);
  be->sync();
  for (int i = 0; i < n; ++i) a[(std::size_t)i] = 0.5f * (float)i;
  const std::vector<int> me{0};
  const std::vector<std::int64_t> bounds{0, n};
  c->prepare_groups({me});
  c->all_reduce_sum(a.data(), n, me);
  c->reduce_scatter_sum(a.data(), bounds, me);
  c->all_gather(a.data(), sizeof(float), bounds, me);
  c->send(a.data(), n * sizeof(float), 0);
  a[0] = -1.f;  // the send holds its own copy
  c->recv(b.data(), n * sizeof(float), 0);
  c->flush();
  EXPECT_EQ(b[0], 0.f);
  for (int i = 1; i < n; ++i) {
    ASSERT_EQ(a[(std::size_t)i], 0.5f * (float)i);
    ASSERT_EQ(b[(std::size_t)i], 0.5f * (float)i);
  }
}

// A run of one process over NCCL (with sockets beside it for the record): bitwise the same one
// rank as a virtual rank (no sum has two members).
TEST(CudaProcesses, OneProcessOverNcclIsBitwiseOneVirtualRank) {
  NEED_GPUS(1);
  (void)::onegpu::test::small_story<16>();
  const std::vector<Record> procs = across_processes(1, "nccl", 1, 1, 1, 0);
  expect_bitwise(procs.at(0), on_virtual_ranks(options(1, 1, 1, 0)), "one rank");
}

// Two GPUs, one process each over NCCL: the virtual ranks' losses to rounding (NCCL's sums
// are in its own order), and every process holds the same weights.
TEST(CudaTwoGpus, TwoProcessesOverNcclFollowVirtualRanks) {
  NEED_GPUS(2);
  (void)::onegpu::test::small_story<16>();
  for (const auto& [dp, ep, pp, zero] : std::vector<std::array<int, 4>>{{2, 1, 1, 0}, {2, 2, 1, 1}, {1, 1, 2, 0}}) {
    const std::string what = "dp " + std::to_string(dp) + " ep " + std::to_string(ep) + " pp " + std::to_string(pp) + " zero " + std::to_string(zero);
    const std::vector<Record> procs = across_processes(2, "nccl", dp, ep, pp, zero);
    const Record virt = on_virtual_ranks(options(dp, ep, pp, zero));
    ASSERT_EQ(procs.size(), 2u);
    EXPECT_EQ(procs[0].master, procs[1].master) << what << ": the processes hold different weights";
    for (int s = 0; s < kSteps; ++s) EXPECT_NEAR(procs[0].losses.at((std::size_t)s), virt.losses[(std::size_t)s], 1e-4) << what << " step " << s;
  }
}

}  // namespace
}  // namespace onegpu::trainer
