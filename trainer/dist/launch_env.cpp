#include "trainer/dist/launch_env.h"

#include <cstdlib>
#include <string>

#include "trainer/error.h"

namespace onegpu::trainer {

namespace {
int whole(const char* name, const char* v, long lo, long hi) {
  std::string s = v;
  char* end = nullptr;
  const long x = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || x < lo || x > hi)
    throw Error(std::string(name) + " must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                " (got '" + s + "')");
  return (int)x;
}
}  // namespace

LaunchEnv launch_env_from(const std::function<const char*(const char*)>& get) {
  LaunchEnv e;
  constexpr long kMaxWorld = 1 << 20;
  if (get("OMPI_COMM_WORLD_SIZE") || get("OMPI_COMM_WORLD_RANK")) {
    e.launcher = "mpirun";
    const char* size = get("OMPI_COMM_WORLD_SIZE");
    const char* rank = get("OMPI_COMM_WORLD_RANK");
    if (!size || !rank) throw Error("mpirun: OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK must both be set");
    e.world = whole("OMPI_COMM_WORLD_SIZE", size, 1, kMaxWorld);
    e.rank = whole("OMPI_COMM_WORLD_RANK", rank, 0, e.world - 1);
    const char* local = get("OMPI_COMM_WORLD_LOCAL_RANK");
    e.local_rank = local ? whole("OMPI_COMM_WORLD_LOCAL_RANK", local, 0, e.world - 1) : e.rank;
    if (const char* a = get("MASTER_ADDR")) e.master_addr = a;
    if (const char* p = get("MASTER_PORT")) e.master_port = whole("MASTER_PORT", p, 1, 65535);
  } else {
    static const char* const kTorchrun[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"};
    // torchrun always sets WORLD_SIZE; a stray RANK in a shell alone does not make a launch.
    if (!get("WORLD_SIZE")) return e;  // one process
    std::string missing;
    for (const char* n : kTorchrun)
      if (!get(n)) missing += std::string(n) + ", ";
    if (!missing.empty()) {
      missing.resize(missing.size() - 2);
      throw Error("torchrun-style launch: " + missing + " not set (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT are all needed)");
    }
    e.launcher = "torchrun";
    e.world = whole("WORLD_SIZE", get("WORLD_SIZE"), 1, kMaxWorld);
    e.rank = whole("RANK", get("RANK"), 0, e.world - 1);
    e.local_rank = whole("LOCAL_RANK", get("LOCAL_RANK"), 0, e.world - 1);
    e.master_addr = get("MASTER_ADDR");
    e.master_port = whole("MASTER_PORT", get("MASTER_PORT"), 1, 65535);
  }
  if (e.master_addr.empty()) throw Error("MASTER_ADDR is empty");
  return e;
}

LaunchEnv launch_env() {
  return launch_env_from([](const char* n) -> const char* { return std::getenv(n); });
}

}  // namespace onegpu::trainer
