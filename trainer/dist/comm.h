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
//   reduce_scatter_sum / all_gather   ZeRO-1: each member keeps (then hands out) its own piece
//                    of the array, pieces as the virtual ranks cut them (bounds given, not
//                    equal), the piece's sums taken member by member in the order given
// Every wait is bounded: a peer that is gone or silent is one line of Error, never a hang.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

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
  // bounds: members.size() + 1 offsets into data, member i's piece [bounds[i], bounds[i + 1]).
  // This member's piece of data becomes the members' sum there; the rest is the transport's
  // (sockets leave it as it was, NCCL sums it too).
  virtual void reduce_scatter_sum(float* data, std::span<const std::int64_t> bounds, std::span<const int> members) = 0;
  // Every member's piece (elem bytes an element) into every other member's data, in place.
  virtual void all_gather(void* data, std::size_t elem, std::span<const std::int64_t> bounds, std::span<const int> members) = 0;
  // Waits until every eager send has left this process (the end of a step).
  virtual void flush() {}
  // Every member list the run's all-reduces and reduce-scatters will name, the same list in
  // the same order on every process, before the first step: a transport that needs a
  // communicator a group (NCCL) makes them here, all processes together. Sockets need none.
  virtual void prepare_groups(const std::vector<std::vector<int>>& groups) { (void)groups; }
};

// Every rank's `bytes` bytes at `mine`, in rank order, into out (world × bytes), on every rank.
// Small host-side exchanges (a step's losses and norms): a group of sends and receives.
void all_gather_bytes(Comm& c, const void* mine, std::size_t bytes, void* out);

// Host-side exchanges of unequal sizes (a checkpoint's pieces), through sends and receives.
// On root: every rank's bytes, in rank order (its own included); elsewhere: empty.
std::vector<std::vector<std::uint8_t>> gather_to_root(Comm& c, std::span<const std::uint8_t> mine, int root = 0);
// root's bytes on every rank.
std::vector<std::uint8_t> broadcast_from_root(Comm& c, std::vector<std::uint8_t> bytes, int root = 0);
// A collective that may have failed on some ranks: each gives its error ("" when it did its
// part); if any failed, every rank throws the same one line (the lowest failing rank's,
// naming it unless it was root, whose error is the run's), so no rank goes on alone or waits.
void agree(Comm& c, const std::string& error, int root = 0);

}  // namespace onegpu::trainer
