#pragma once
// Comm (comm.h) over TCP sockets, for CPUs: a full mesh, one connection per pair of ranks, set
// up through the rendezvous (each rank listens on a port of its own; rank 0 hands out the table
// of addresses). Sends and receives of one pair keep their order; each message carries its
// size, so a send and a receive that disagree are one line of Error, not garbage.
//
// All sockets are non-blocking and every wait goes through one poll loop that moves every
// pending send and receive of this rank at once: an all-reduce (every member sends to every
// other and receives from every other) cannot deadlock on full kernel buffers, and eager sends
// keep moving while the rank waits for something else. No wait lasts longer than the timeout
// without a byte moving: then, or when a peer closes its end, the call throws one line
// ("socket comm: rank 1 waited 5 s for 4096 bytes from rank 0 ...").
//
// all_reduce_sum: each member sends its data to every other; each then sums the members'
// arrays in the given order (acc = first; acc += next ...), exactly as the virtual ranks do,
// so the result is bitwise theirs. Bytes moved: (members - 1) × n floats a member each way,
// which is plenty for CPUs and tests (a ring would move less; it would not change the sums
// only if it kept this order).
// reduce_scatter_sum: each member sends member i the part of its data in i's piece and sums
// what it gets for its own piece the same way (first member's + second's + ...): bitwise the
// virtual ranks' reduce-scatter. all_gather: each member's piece to every other member.
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "trainer/dist/comm.h"
#include "trainer/dist/rendezvous.h"

namespace onegpu::trainer {

class SocketComm final : public Comm {
 public:
  // Collective over rv's world: blocks until every pair is connected (or throws at the timeout).
  explicit SocketComm(Rendezvous& rv, double timeout_s = 60.0);
  ~SocketComm() override;
  SocketComm(const SocketComm&) = delete;
  SocketComm& operator=(const SocketComm&) = delete;

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  void all_reduce_sum(float* data, std::int64_t n, std::span<const int> members) override;
  void reduce_scatter_sum(float* data, std::span<const std::int64_t> bounds, std::span<const int> members) override;
  void all_gather(void* data, std::size_t elem, std::span<const std::int64_t> bounds, std::span<const int> members) override;
  void send(const void* data, std::size_t bytes, int peer) override;
  void recv(void* data, std::size_t bytes, int peer) override;
  void group(const std::function<void()>& fn) override;
  void flush() override;

  // Bytes this rank has sent and received so far (payloads, not headers).
  std::uint64_t bytes_sent() const { return sent_; }
  std::uint64_t bytes_received() const { return received_; }

 private:
  struct Out {  // header and payload, copied: the caller may reuse its buffer at once
    std::vector<std::uint8_t> buf;
    std::size_t at = 0;
  };
  struct In {
    std::uint8_t head[16];
    std::size_t head_at = 0;
    std::uint8_t* data = nullptr;
    std::size_t bytes = 0, at = 0;
  };
  struct Peer {
    int fd = -1;
    std::deque<Out> out;
    std::deque<In> in;
  };
  enum class Until { RecvsDone, AllDone };
  void check_peer(int peer, const char* what) const;
  std::size_t member_index(std::span<const int> members, const char* what) const;
  void progress(Until until);
  void pump_out(int p);
  void pump_in(int p);
  [[noreturn]] void stalled();
  int rank_ = 0, world_ = 1;
  double timeout_s_;
  std::vector<Peer> peers_;  // by rank; [rank_] unused
  int grouped_ = 0;          // inside group(): receives wait for the group's end
  std::uint64_t sent_ = 0, received_ = 0;
};

}  // namespace onegpu::trainer
