#pragma once
// The processes of a run meet once over TCP, before NCCL exists: rank 0 listens at
// MASTER_ADDR:MASTER_PORT (launch_env.h), every other rank connects (retrying until the
// timeout, since rank 0 may start last) and says who it is. The connections then stay open for
// two small exchanges: broadcast (rank 0's bytes to all: NCCL's unique id) and gather (every
// rank's bytes to rank 0: what the Lab and the trace need of each rank at the end).
//
// Every wait has the timeout; a missing, duplicate or foreign peer is one line of Error
// ("rendezvous: rank 0 heard from 2 of 3 ranks within 5 s (missing: 2) at 127.0.0.1:29500").
// Not for bulk data: tensors go through NCCL.
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/dist/launch_env.h"

namespace onegpu::trainer {

class Rendezvous {
 public:
  // Blocks until every rank is connected (rank 0) or this rank is accepted (others).
  explicit Rendezvous(const LaunchEnv& env, double timeout_s = 60.0);
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  // Rank 0's `bytes` on every rank (the argument is ignored elsewhere).
  std::vector<std::uint8_t> broadcast(const std::vector<std::uint8_t>& bytes);
  // On rank 0: every rank's bytes in rank order (its own first); elsewhere: empty.
  std::vector<std::vector<std::uint8_t>> gather(const std::vector<std::uint8_t>& bytes);

  int rank() const { return env_.rank; }
  int world() const { return env_.world; }
  double timeout_s() const { return timeout_s_; }
  // The address other ranks can reach this process at: MASTER_ADDR on rank 0; elsewhere this
  // end of the connection to rank 0 (numeric), the interface that routes to the others.
  std::string local_host() const;

 private:
  void connect();
  void close_all();
  LaunchEnv env_;
  double timeout_s_;
  int listen_fd_ = -1;
  std::vector<int> peers_;  // rank 0: socket of rank r at [r] (-1 for itself); others: [0] to rank 0
};

}  // namespace onegpu::trainer
