#pragma once
// Who this process is in a run of one process per GPU, read from what its launcher set:
//   mpirun (OpenMPI)  OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK;
//                     the rendezvous at MASTER_ADDR:MASTER_PORT if set, else 127.0.0.1:29500
//                     (mpirun on one machine needs nothing more)
//   torchrun          RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (all five, once
//                     WORLD_SIZE is set)
//   neither           one process: rank 0 of 1
// local_rank picks the GPU. Rank 0 listens at the rendezvous address (rendezvous.h); NCCL's
// unique id goes from there to the others.
#include <functional>
#include <string>

namespace onegpu::trainer {

struct LaunchEnv {
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string launcher = "none";  // "mpirun", "torchrun" or "none"
};

// Reads the variables through `get` (nullptr when unset). Throws Error with one line naming
// the variable for a value that is not a whole number, a rank outside the world, a port
// outside 1..65535, or a torchrun set with some of its five variables missing.
LaunchEnv launch_env_from(const std::function<const char*(const char*)>& get);
LaunchEnv launch_env();  // from this process's environment

}  // namespace onegpu::trainer
