// The socket transport with real processes on localhost: the all-reduce is bitwise the sum in
// member order, hand-offs arrive in order, big exchanges in both directions do not deadlock,
// and a peer that stops or falls silent is one line of Error within the timeout.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "tests/trainer/dist/processes.h"
#include "trainer/dist/socket_comm.h"
#include "trainer/error.h"

namespace onegpu::trainer {
namespace {

using test::env;
using test::exit_status;
using test::free_port;
using test::spawn;

// Rank r's values: different magnitudes so the order of the sum shows in its rounding.
std::vector<float> values(int r, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = (float)((i * 2654435761u + (unsigned)r * 40503u) % 1000) * (r == 1 ? 1e-7f : 1.f) + 0.1f * (float)r;
  return v;
}
std::vector<float> sum_in_order(const std::vector<int>& members, std::size_t n) {
  std::vector<float> acc = values(members[0], n);
  for (std::size_t i = 1; i < members.size(); ++i) {
    const std::vector<float> x = values(members[i], n);
    for (std::size_t j = 0; j < n; ++j) acc[j] += x[j];
  }
  return acc;
}

// Everything a rank of the 3-process test does; true when all of it checked out.
bool rank_program(int r, int world, int port) {
  Rendezvous rv(env(r, world, port), 20.0);
  SocketComm c(rv, 20.0);
  const std::size_t n = 1 << 20;  // 4 MB a member: more than a socket's kernel buffers
  std::vector<float> v = values(r, n);
  const std::vector<int> all = {0, 1, 2};
  c.all_reduce_sum(v.data(), (std::int64_t)n, all);
  if (std::memcmp(v.data(), sum_in_order(all, n).data(), n * sizeof(float)) != 0) return false;
  // A sub-group (as a stage's dp ranks): ranks 0 and 2 only.
  if (r != 1) {
    std::vector<float> w = values(r, 1000);
    c.all_reduce_sum(w.data(), 1000, std::vector<int>{0, 2});
    if (w != sum_in_order({0, 2}, 1000)) return false;
  }
  // Eager sends: every rank sends 4 MB to the next, then receives from the previous.
  const int next = (r + 1) % world, prev = (r + world - 1) % world;
  std::vector<float> in(n);
  c.send(values(r, n).data(), n * sizeof(float), next);
  c.send(&r, sizeof r, next);
  c.recv(in.data(), n * sizeof(float), prev);
  int who = -1;
  c.recv(&who, sizeof who, prev);
  if (in != values(prev, n) || who != prev) return false;
  // Every rank's id to every rank.
  std::vector<int> ids((std::size_t)world);
  const int mine = 100 + r;
  all_gather_bytes(c, &mine, sizeof mine, ids.data());
  return ids == std::vector<int>{100, 101, 102};
}

TEST(SocketComm, AllReduceHandOffsAndGatherAcrossThreeProcesses) {
  const int port = free_port(), world = 3;
  std::vector<pid_t> kids;
  for (int r = 1; r < world; ++r) kids.push_back(spawn([=] { return rank_program(r, world, port); }));
  EXPECT_TRUE(rank_program(0, world, port));
  for (pid_t k : kids) EXPECT_EQ(exit_status(k), 0);
}

TEST(SocketComm, APeerThatStopsIsOneLine) {
  const int port = free_port();
  const pid_t one = spawn([=] {
    Rendezvous rv(env(1, 2, port), 10.0);
    SocketComm c(rv, 10.0);
    return true;  // leaves without sending what rank 0 waits for
  });
  Rendezvous rv(env(0, 2, port), 10.0);
  SocketComm c(rv, 10.0);
  const auto t0 = std::chrono::steady_clock::now();
  float x[4] = {};
  try {
    c.recv(x, sizeof x, 1);
    FAIL() << "received from a rank that left";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "socket comm: rank 1 closed its connection while rank 0 waited for 16 bytes from it (it stopped or failed: see its message)");
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_EQ(exit_status(one), 0);
}

TEST(SocketComm, ASilentPeerIsOneLineAtTheTimeout) {
  const int port = free_port();
  const pid_t one = spawn([=] {
    Rendezvous rv(env(1, 2, port), 10.0);
    SocketComm c(rv, 10.0);
    sleep(30);  // alive but silent (killed by the test)
    return true;
  });
  Rendezvous rv(env(0, 2, port), 10.0);
  SocketComm c(rv, 0.5);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<float> g(8, 1.f);
  try {
    c.all_reduce_sum(g.data(), 8, std::vector<int>{0, 1});  // rank 1 never joins it
    FAIL() << "all-reduced without rank 1";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "socket comm: rank 0 waited 0.5 s for 32 bytes from rank 1 (it stopped, hangs, or its program sends something else)");
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  kill(one, SIGKILL);
  exit_status(one);
}

TEST(SocketComm, SizesThatDisagreeAreNamed) {
  const int port = free_port();
  const pid_t one = spawn([=] {
    Rendezvous rv(env(1, 2, port), 10.0);
    SocketComm c(rv, 10.0);
    const double d = 1.0;
    c.send(&d, sizeof d, 0);
    c.flush();
    return true;
  });
  Rendezvous rv(env(0, 2, port), 10.0);
  SocketComm c(rv, 10.0);
  float f = 0;
  try {
    c.recv(&f, sizeof f, 1);
    FAIL() << "took 8 bytes as 4";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "socket comm: rank 1 sent 8 bytes where rank 0 expected 4 (their programs disagree)");
  }
  EXPECT_EQ(exit_status(one), 0);
}

}  // namespace
}  // namespace onegpu::trainer
