// The TCP rendezvous with real processes on localhost: rank 0's bytes reach every rank, every
// rank's bytes reach rank 0 in rank order, and a missing or unreachable rank is one line
// within the timeout, never a hang.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/trainer/dist/processes.h"
#include "trainer/dist/rendezvous.h"
#include "trainer/error.h"

namespace onegpu::trainer {
namespace {

using test::env;
using test::exit_status;
using test::free_port;
using test::spawn;

std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

TEST(Rendezvous, BroadcastAndGatherAcrossFourProcesses) {
  const int port = free_port(), world = 4;
  const std::vector<std::uint8_t> id = bytes(std::string(128, 'i'));  // NCCL's unique id is 128 bytes
  std::vector<pid_t> kids;
  // Ranks 1..3 start first: they retry until rank 0 listens.
  for (int r = world - 1; r >= 1; --r)
    kids.push_back(spawn([=] {
      Rendezvous rv(env(r, world, port), 20.0);
      if (rv.broadcast({}) != id) return false;
      return rv.gather(bytes("rank " + std::to_string(r))).empty();
    }));
  usleep(200 * 1000);
  Rendezvous rv(env(0, world, port), 20.0);
  EXPECT_EQ(rv.broadcast(id), id);
  const auto all = rv.gather(bytes("rank 0"));
  ASSERT_EQ(all.size(), 4u);
  for (int r = 0; r < world; ++r) EXPECT_EQ(all[(std::size_t)r], bytes("rank " + std::to_string(r)));
  for (pid_t k : kids) EXPECT_EQ(exit_status(k), 0);
}

TEST(Rendezvous, AMissingRankIsOneLineWithinTheTimeout) {
  const int port = free_port();
  const pid_t one = spawn([=] {
    Rendezvous rv(env(1, 3, port), 10.0);
    return true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Rendezvous rv(env(0, 3, port), 1.0);
    FAIL() << "rank 0 started without rank 2";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "rendezvous: rank 0 heard from 2 of 3 ranks within 1 s (missing: 2) at 127.0.0.1:" + std::to_string(port));
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_EQ(exit_status(one), 1);  // rank 1 hears that the run did not start
}

TEST(Rendezvous, NoRankZeroIsOneLineWithinTheTimeout) {
  const int port = free_port();
  try {
    Rendezvous rv(env(2, 3, port), 0.5);
    FAIL() << "connected to nobody";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("rendezvous: rank 2 could not reach rank 0 at 127.0.0.1:" + std::to_string(port) + " within 0.5 s (", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos);
  }
}

TEST(Rendezvous, AWrongWorldSizeIsNamed) {
  const int port = free_port();
  const pid_t one = spawn([=] {
    Rendezvous rv(env(1, 3, port), 10.0);  // told 3, rank 0 was told 2
    return true;
  });
  try {
    Rendezvous rv(env(0, 2, port), 10.0);
    FAIL() << "accepted a peer of another world";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "rendezvous: rank 1 was told WORLD_SIZE 3, rank 0 2 (at 127.0.0.1:" + std::to_string(port) + ")");
  }
  EXPECT_EQ(exit_status(one), 1);
}

TEST(Rendezvous, OneProcessNeedsNoNetwork) {
  Rendezvous rv(LaunchEnv{}, 0.1);
  EXPECT_EQ(rv.broadcast(bytes("x")), bytes("x"));
  EXPECT_EQ(rv.gather(bytes("y")).size(), 1u);
}

}  // namespace
}  // namespace onegpu::trainer
