#pragma once
// The seam between a process's per-rank program and whatever carries its data to the other
// processes: sockets on CPUs (socket_comm.h) or NCCL on GPUs (cuda/nccl_comm.h). What the plan's
// ops need of it:
//   all_reduce_sum   a gradient all-reduce of the given members (fp32, in place). Sums are taken
//                    member by member in the order given (rank order in a plan), so every member
//                    gets bitwise the sum the virtual ranks take (parallel_trainer.cpp,
//                    all_reduce) -- where the transport can promise it (sockets: yes; NCCL: no,
//                    its rings and trees sum in their own order)
//   send / recv      pipeline hand-offs. A send outside group() is eager: it may return before
//                    the peer receives, as the engine's sends do, so two ranks that send to each
//                    other and then receive do not wait on each other
//   group            fn's sends and receives progress together and all are done when it returns:
//                    an all-to-all is every pair's send and receive in one group
// Every wait is bounded: a peer that is gone or silent is one line of Error, never a hang.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

namespace onegpu::trainer {

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;

  // members: ranks in the order of the sum, this rank among them.
  virtual void all_reduce_sum(float* data, std::int64_t n, std::span<const int> members) = 0;
  virtual void send(const void* data, std::size_t bytes, int peer) = 0;
  virtual void recv(void* data, std::size_t bytes, int peer) = 0;
  virtual void group(const std::function<void()>& fn) = 0;
  // Waits until every eager send has left this process (the end of a step).
  virtual void flush() {}
};

// Every rank's `bytes` bytes at `mine`, in rank order, into out (world × bytes), on every rank.
// Small host-side exchanges (a step's losses and norms): a group of sends and receives.
void all_gather_bytes(Comm& c, const void* mine, std::size_t bytes, void* out);

}  // namespace onegpu::trainer
