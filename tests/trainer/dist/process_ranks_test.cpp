// One process per rank on CPUs: the split run's processes, each running only its own rank's
// program with the collectives and hand-offs over sockets, give bitwise the losses, gradient
// norms and weights of the same split on virtual ranks in one process.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
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

bool read_all(int fd, void* p, std::size_t n) {
  auto* b = static_cast<char*>(p);
  std::size_t got = 0;
  for (ssize_t k; got < n && (k = ::read(fd, b + got, n - got)) > 0;) got += (std::size_t)k;
  return got == n;
}

constexpr int kSteps = 3;

std::uint64_t digest(const std::vector<float>& v) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* b = reinterpret_cast<const std::uint8_t*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// Per step: loss, aux loss, gradient norm, learning rate, every rank's activation levels
// (how many, and their sum), every rank's optimizer bytes (weighted by rank); then the
// weights' digest.
constexpr std::size_t kPerStep = 7;
std::vector<double> record(ParallelTrainer& t, int steps = kSteps) {
  std::vector<double> out;
  for (int s = 0; s < steps; ++s) {
    const ParallelStepResult r = t.step();
    const std::vector<Event> mem = t.memory_events();
    double bytes = 0, optimizer = 0;
    for (const Event& e : mem) bytes += (double)e.bytes * (e.rank + 1);
    for (std::size_t k = 0; k < r.memory.size(); ++k)
      optimizer += (double)r.memory[k].current[(int)MemCategory::Optimizer] * (double)(k + 1);
    out.insert(out.end(), {r.loss, r.aux_loss, r.grad_norm, (double)r.lr, (double)mem.size(), bytes, optimizer});
  }
  const std::uint64_t d = digest(t.master_weights());  // a collective across processes
  double bits;
  std::memcpy(&bits, &d, sizeof bits);
  out.push_back(bits);
  return out;
}

// What one process does with its trainer; its doubles come back to the test.
using Work = std::function<std::vector<double>(ParallelTrainer&)>;

// The same split as `world` processes, each running `work`: rank 0's record (every rank's
// must be the same length and bits).
std::vector<double> across_processes(const ParallelOptions& base, int world, const Work& work = [](ParallelTrainer& t) { return record(t); }) {
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
      const std::vector<double> rec = work(t);
      const std::uint64_t n = rec.size() * sizeof(double);
      return ::write(p[1], &n, sizeof n) == (ssize_t)sizeof n && ::write(p[1], rec.data(), n) == (ssize_t)n;
    }));
    ::close(p[1]);
    fds.push_back(p[0]);
  }
  std::vector<std::vector<double>> recs((std::size_t)world);
  for (int r = 0; r < world; ++r) {
    std::vector<double>& rec = recs[(std::size_t)r];
    std::uint64_t n = 0;
    const bool sized = read_all(fds[(std::size_t)r], &n, sizeof n);
    rec.resize(n / sizeof(double));
    EXPECT_TRUE(sized && read_all(fds[(std::size_t)r], rec.data(), n)) << "rank " << r << " wrote no record";
    ::close(fds[(std::size_t)r]);
  }
  for (pid_t k : kids) EXPECT_EQ(exit_status(k), 0);
  for (int r = 1; r < world; ++r)
    EXPECT_TRUE(recs[(std::size_t)r].size() == recs[0].size() &&
                (recs[0].empty() || std::memcmp(recs[0].data(), recs[(std::size_t)r].data(), recs[0].size() * sizeof(double)) == 0))
        << "rank " << r;
  return recs[0];
}

std::vector<double> on_virtual_ranks(const ParallelOptions& o, const Work& work = [](ParallelTrainer& t) { return record(t); }) {
  const auto& s = onegpu::test::small_story<16>();
  ParallelTrainer t(s.model, o, s.train);
  return work(t);
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

// ZeRO-1: each process updates its own pieces of the optimizer state; gradients are
// reduce-scattered and the bf16 weights all-gathered through the transport. Bitwise the
// virtual ranks' ZeRO-1 run, and each process holds half the optimizer bytes of zero 0.
TEST(ProcessRanks, ZeroOneTwoProcessesMatchVirtualRanksBitwise) {
  (void)onegpu::test::small_story<16>();
  const ParallelOptions o = onegpu::test::split_options(2, 1, 1, Schedule::OneFOneB, 1);
  const std::vector<double> virt = on_virtual_ranks(o);
  expect_bitwise(across_processes(o, 2), virt);
  const std::vector<double> unsharded = on_virtual_ranks(onegpu::test::split_options(2, 1, 1, Schedule::OneFOneB, 0));
  EXPECT_LT(virt[6], 0.6 * unsharded[6]) << "ZeRO-1's optimizer bytes are not about half";
  EXPECT_EQ(std::memcmp(&virt[0], &unsharded[0], sizeof(double)), 0) << "zero 0 and 1 train the same";
}

// Expert groups of two (dp 4, ep 2) beside the dense group of four, under ZB-H1.
TEST(ProcessRanks, ZeroOneFourProcessesWithExpertsMatchVirtualRanksBitwise) {
  (void)onegpu::test::small_story<16>();
  const ParallelOptions o = onegpu::test::split_options(4, 2, 1, Schedule::ZeroBubbleH1, 1);
  expect_bitwise(across_processes(o, 4), on_virtual_ranks(o));
}

// A pipeline too: two stages, each a dense group of two.
TEST(ProcessRanks, ZeroOneDataAndPipelineFourProcessesMatchVirtualRanksBitwise) {
  (void)onegpu::test::small_story<16>();
  const ParallelOptions o = onegpu::test::split_options(2, 1, 2, Schedule::OneFOneB, 1);
  expect_bitwise(across_processes(o, 4), on_virtual_ranks(o));
}

// Two transports, as a process per GPU has them (NCCL for the ranks' memory, sockets beside it
// for the step's record and checkpoints): here two socket meshes. The run is bitwise the
// virtual ranks' and each mesh carries its share (the record, the routers' counts and the
// gathered weights on the host's; gradients, weights and rows on the other).
TEST(ProcessRanks, TheHostsExchangesGoThroughAHostTransportOfTheirOwn) {
  const auto& s = onegpu::test::small_story<16>();
  const ParallelOptions o = onegpu::test::split_options(2, 2, 1, Schedule::OneFOneB, 1);
  const int port = free_port();
  std::vector<pid_t> kids;
  std::vector<int> fds;
  for (int r = 0; r < 2; ++r) {
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    kids.push_back(spawn([&, r, p] {
      ::close(p[0]);
      Rendezvous rv(env(r, 2, port), 30.0);
      SocketComm device(rv, 30.0), host(rv, 30.0);
      ParallelOptions x = o;
      x.comm = &device;
      x.host_comm = &host;
      ParallelTrainer t(s.model, x, s.train);
      std::vector<double> rec = record(t);
      rec.push_back((double)device.bytes_sent());
      rec.push_back((double)host.bytes_sent());
      const std::uint64_t n = rec.size() * sizeof(double);
      return ::write(p[1], &n, sizeof n) == (ssize_t)sizeof n && ::write(p[1], rec.data(), n) == (ssize_t)n;
    }));
    ::close(p[1]);
    fds.push_back(p[0]);
  }
  const std::vector<double> virt = on_virtual_ranks(o);
  for (int r = 0; r < 2; ++r) {
    std::uint64_t n = 0;
    std::vector<double> rec;
    if (read_all(fds[(std::size_t)r], &n, sizeof n)) {
      rec.resize(n / sizeof(double));
      EXPECT_TRUE(read_all(fds[(std::size_t)r], rec.data(), n));
    }
    ::close(fds[(std::size_t)r]);
    ASSERT_EQ(rec.size(), virt.size() + 2) << "rank " << r << " wrote no record";
    const double device_bytes = rec[rec.size() - 2], host_bytes = rec.back();
    rec.resize(virt.size());
    expect_bitwise(rec, virt);
    EXPECT_GT(device_bytes, 1e5) << "rank " << r << ": the ranks' memory did not go over its transport";
    EXPECT_GT(host_bytes, 1e3) << "rank " << r << ": the record did not go over the host's transport";
  }
  for (pid_t k : kids) EXPECT_EQ(exit_status(k), 0);
}

std::vector<char> file_bytes(const std::string& path) {
  std::vector<char> b;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[65536];
    for (std::size_t k; (k = std::fread(buf, 1, sizeof buf, f)) > 0;) b.insert(b.end(), buf, buf + k);
    std::fclose(f);
  }
  return b;
}

std::string temp_path(const std::string& name) {
  return (::testing::TempDir().empty() ? std::string("/tmp/") : ::testing::TempDir()) + "onegpu_" + std::to_string(::getpid()) + "_" + name;
}

// --save and --resume across processes: after two steps the processes' file is byte for byte
// the file the same split on virtual ranks writes; a run of processes resumed from the
// virtual ranks' file goes on bitwise as virtual ranks resumed from the processes' file, and
// both as the run that never stopped (its losses, norms and weights: a fresh trainer's
// activation levels differ in its first step from one that has run, whatever the file).
void expect_checkpoints_match(const ParallelOptions& o, int world, const std::string& name) {
  const std::string virt_file = temp_path(name + "_virtual.ckpt"), proc_file = temp_path(name + "_processes.ckpt");
  const std::vector<double> whole = on_virtual_ranks(o, [&](ParallelTrainer& t) {
    record(t, 2);
    t.save(virt_file);
    return record(t, 2);
  });
  across_processes(o, world, [&](ParallelTrainer& t) {
    record(t, 2);
    t.save(proc_file);
    return std::vector<double>{};
  });
  const std::vector<char> a = file_bytes(virt_file), b = file_bytes(proc_file);
  EXPECT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b) << "the processes wrote another file than the virtual ranks (" << b.size() << " vs " << a.size() << " bytes)";
  const std::vector<double> resumed = on_virtual_ranks(o, [&](ParallelTrainer& t) {
    t.load(proc_file);
    return record(t, 2);
  });
  expect_bitwise(across_processes(o, world, [&](ParallelTrainer& t) {
                   t.load(virt_file);
                   EXPECT_EQ(t.steps_done(), 2);
                   return record(t, 2);
                 }),
                 resumed);
  ASSERT_EQ(resumed.size(), whole.size());
  for (std::size_t i = 0; i < whole.size(); ++i)
    if (i % kPerStep < 4 || i + 1 == whole.size()) {
      EXPECT_EQ(std::memcmp(&resumed[i], &whole[i], sizeof(double)), 0) << "value " << i << ": " << resumed[i] << " vs " << whole[i];
    }
  std::remove(virt_file.c_str());
  std::remove(proc_file.c_str());
}

TEST(ProcessRanks, CheckpointsOfDataParallelZeroOneProcessesAreTheVirtualRanksFile) {
  (void)onegpu::test::small_story<16>();
  expect_checkpoints_match(onegpu::test::split_options(2, 2, 1, Schedule::OneFOneB, 1), 2, "dp2ep2z1");
}

TEST(ProcessRanks, CheckpointsOfAPipelineAreTheVirtualRanksFile) {
  (void)onegpu::test::small_story<16>();
  expect_checkpoints_match(onegpu::test::split_options(1, 1, 2, Schedule::OneFOneB), 2, "pp2");
}

// A checkpoint that cannot be loaded is the same one line on every process, never a hang:
// no file, and a file of another split.
TEST(ProcessRanks, ABadCheckpointIsOneLineOnEveryProcess) {
  (void)onegpu::test::small_story<16>();
  const std::string other = temp_path("dp4.ckpt");
  on_virtual_ranks(onegpu::test::split_options(4, 1, 1, Schedule::OneFOneB), [&](ParallelTrainer& t) {
    t.save(other);
    return std::vector<double>{};
  });
  const ParallelOptions o = onegpu::test::split_options(2, 1, 1, Schedule::OneFOneB);
  for (const std::string& path : {temp_path("missing.ckpt"), other}) {
    std::string local;
    try {
      on_virtual_ranks(o, [&](ParallelTrainer& t) {
        t.load(path);
        return std::vector<double>{};
      });
    } catch (const Error& e) {
      local = e.what();
    }
    ASSERT_FALSE(local.empty()) << path << " loaded";
    // Each process says whether its load threw the line the virtual ranks' load throws.
    const std::vector<double> said = across_processes(o, 2, [&](ParallelTrainer& t) {
      try {
        t.load(path);
      } catch (const Error& e) {
        return std::vector<double>{e.what() == local ? 1.0 : 0.0};
      }
      return std::vector<double>{-1.0};
    });
    ASSERT_EQ(said.size(), 1u);
    EXPECT_EQ(said[0], 1.0) << path << ": not the line '" << local << "' on every process";
  }
  std::remove(other.c_str());
}

// A transport of three ranks that never connects: the split's check comes first.
struct NoComm final : Comm {
  int rank() const override { return 0; }
  int world() const override { return 3; }
  void all_reduce_sum(float*, std::int64_t, std::span<const int>) override {}
  void send(const void*, std::size_t, int) override {}
  void recv(void*, std::size_t, int) override {}
  void group(const std::function<void()>& fn) override { fn(); }
  void reduce_scatter_sum(float*, std::span<const std::int64_t>, std::span<const int>) override {}
  void all_gather(void*, std::size_t, std::span<const std::int64_t>, std::span<const int>) override {}
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
  o.separate_first_copy = true;
  try {
    ParallelTrainer t(s.model, o, s.train);
    FAIL() << "ran separate first copies across processes";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "one process per rank does not run separate first copies yet");
  }
}

}  // namespace
}  // namespace onegpu::trainer
