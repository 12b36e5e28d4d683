// The environment mpirun and torchrun set, read into rank, world, local rank and the
// rendezvous address; anything inconsistent is one line naming the variable.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "trainer/dist/launch_env.h"
#include "trainer/error.h"

namespace onegpu::trainer {
namespace {

LaunchEnv from(const std::map<std::string, std::string>& vars) {
  return launch_env_from([&](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}
std::string error_of(const std::map<std::string, std::string>& vars) {
  try {
    from(vars);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LaunchEnv, NothingSetIsOneProcess) {
  const LaunchEnv e = from({});
  EXPECT_EQ(e.launcher, "none");
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.world, 1);
  EXPECT_EQ(from({{"RANK", "5"}}).world, 1);  // a stray RANK without WORLD_SIZE is no launch
}

TEST(LaunchEnv, Torchrun) {
  const LaunchEnv e = from({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29511"}});
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_addr, "node0");
  EXPECT_EQ(e.master_port, 29511);
}

TEST(LaunchEnv, MpirunWithAndWithoutAnAddress) {
  LaunchEnv e = from({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  EXPECT_EQ(e.launcher, "mpirun");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world, 2);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_addr, "127.0.0.1");  // one machine: the default rendezvous
  EXPECT_EQ(e.master_port, 29500);
  e = from({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "6000"}});
  EXPECT_EQ(e.master_addr, "10.0.0.5");
  EXPECT_EQ(e.master_port, 6000);
  EXPECT_EQ(e.local_rank, 0);  // no local rank given: the rank
}

TEST(LaunchEnv, BadValuesAreOneLineNamingTheVariable) {
  const std::map<std::string, std::string> ok = {
      {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}};
  auto with = [&](const std::string& k, const std::string& v) {
    auto m = ok;
    m[k] = v;
    return error_of(m);
  };
  EXPECT_EQ(with("WORLD_SIZE", "two"), "WORLD_SIZE must be a whole number from 1 to 1048576 (got 'two')");
  EXPECT_EQ(with("RANK", "2"), "RANK must be a whole number from 0 to 1 (got '2')");
  EXPECT_EQ(with("RANK", "-1"), "RANK must be a whole number from 0 to 1 (got '-1')");
  EXPECT_EQ(with("MASTER_PORT", "70000"), "MASTER_PORT must be a whole number from 1 to 65535 (got '70000')");
  EXPECT_EQ(with("MASTER_ADDR", ""), "MASTER_ADDR is empty");
  EXPECT_EQ(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}}),
            "torchrun-style launch: LOCAL_RANK, MASTER_ADDR, MASTER_PORT not set (RANK, WORLD_SIZE, LOCAL_RANK, "
            "MASTER_ADDR and MASTER_PORT are all needed)");
  EXPECT_EQ(error_of({{"OMPI_COMM_WORLD_RANK", "0"}}), "mpirun: OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK must both be set");
  for (const std::string& e : {with("WORLD_SIZE", "x"), with("RANK", "9")}) EXPECT_EQ(e.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace onegpu::trainer
