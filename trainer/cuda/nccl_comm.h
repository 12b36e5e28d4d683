#pragma once
// One rank per GPU: the NCCL communicator a process of a multi-process run uses (launch_env.h
// says who it is, rendezvous.h brings NCCL's unique id from rank 0). What the per-rank
// programs need of it:
//   all_reduce_sum     the gradient all-reduce of a data-parallel group (in place, fp32)
//   send / recv        pipeline hand-offs; inside group() they form one grouped call, which
//                      is how an all-to-all is made (every pair's send and receive at once)
// Calls are queued on the given CUDA stream and return at once.
//
// libnccl is opened at run time (dlopen of libnccl.so.2), like cuBLAS, so no binary needs it
// to start; a missing library is one line of Error when a communicator is made. NCCL's sums
// are not in a fixed order across ranks (ring and tree algorithms), unlike the virtual ranks'
// (trainer/parallel): runs across GPUs match the local path to rounding, not bitwise.
// NCCL refuses two ranks on one GPU, so one GPU tests this path at world size 1 only (two
// processes sharing one GPU test the rest of the per-process path over sockets instead).
// Built only with CUDA (ONEGPU_HAVE_CUDA; elsewhere make_nccl_transport says so in one line).
// Run once on one H200 (README, "What has run where"): world size 1 only; two GPUs not yet.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "trainer/dist/comm.h"
#include "trainer/dist/rendezvous.h"

namespace onegpu::trainer {

class NcclComm {
 public:
  // Collective over the processes of rv's world: each makes its communicator on `device`.
  NcclComm(Rendezvous& rv, int device);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const { return rank_; }
  int world() const { return world_; }

  // A communicator for each group (global ranks, in the order its members take their places),
  // through ncclCommSplit: collective over the whole world, every process giving the same
  // groups in the same order (Comm::prepare_groups). The whole world in rank order needs none.
  void make_groups(const std::vector<std::vector<int>>& groups);

  // stream: a cudaStream_t (void* here, so this header needs no CUDA headers).
  void all_reduce_sum(float* data, std::int64_t n, void* stream);
  // Over `members` (one of make_groups', or the whole world in rank order).
  void all_reduce_sum(float* data, std::int64_t n, std::span<const int> members, void* stream);
  void send(const void* data, std::size_t bytes, int peer, void* stream);
  void recv(void* data, std::size_t bytes, int peer, void* stream);
  // fn's sends and receives as one grouped NCCL call (ncclGroupStart / ncclGroupEnd).
  void group(const std::function<void()>& fn);
  // An error NCCL found while its kernels ran (a peer gone, a network failure): one line, or "".
  std::string async_error() const;
  // Ends every communicator's kernels (after a peer stopped): the process can then leave.
  void abort();

  struct Lib;  // NCCL's entry points (nccl_comm.cpp)

 private:
  void* comm_of(std::span<const int> members) const;
  const Lib& lib_;
  void* comm_ = nullptr;  // ncclComm_t
  std::map<std::vector<int>, void*> groups_;  // members -> ncclComm_t (this rank's groups only)
  std::set<std::vector<int>> made_;            // every group split so far, this rank's or not
  int rank_ = 0, world_ = 1;
};

// NcclComm behind the transport seam (trainer/dist/comm.h): what a process per GPU hands
// ParallelOptions::comm, with a SocketComm beside it as ParallelOptions::host_comm for the
// small host-side exchanges (NCCL takes device memory only). Every call returns once its
// transfer is done (the transport's own stream is synchronised): the trainer's host code reads
// the ranks' managed memory right after, and waits for its backend before each call. That wait
// is bounded: an error NCCL reports, or no end within timeout_s, aborts the communicators and
// is one line of Error (NCCL's own calls that set up connections are not bounded here).
//   all_reduce_sum      ncclAllReduce on the members' communicator (make_groups)
//   reduce_scatter_sum  an all-reduce of the whole span on the members' communicator: every
//                       member's piece is the sum (the rest is summed too)
//   all_gather          each member's piece sent to every other member, in one group
//   send                deferred: copied to a buffer of its own, sent with this rank's next
//                       receive, group or flush in one NCCL group, so two ranks that send to
//                       each other before they receive do not wait on each other
// Sums are in NCCL's order, not rank order: runs match the virtual ranks to rounding only.
// Its tests ran once on one H200 at world size 1; across two GPUs they have not run yet.
class NcclTransport final : public Comm {
 public:
  // Makes its own stream on the current device.
  explicit NcclTransport(NcclComm& c, double timeout_s = 60.0);
  NcclTransport(std::unique_ptr<NcclComm> c, double timeout_s);  // the same, owning c
  ~NcclTransport() override;
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;
  int rank() const override { return c_.rank(); }
  int world() const override { return c_.world(); }
  void all_reduce_sum(float* data, std::int64_t n, std::span<const int> members) override;
  void reduce_scatter_sum(float* data, std::span<const std::int64_t> bounds, std::span<const int> members) override;
  void all_gather(void* data, std::size_t elem, std::span<const std::int64_t> bounds, std::span<const int> members) override;
  void send(const void* data, std::size_t bytes, int peer) override;
  void recv(void* data, std::size_t bytes, int peer) override;
  void group(const std::function<void()>& fn) override;
  void flush() override;
  void prepare_groups(const std::vector<std::vector<int>>& groups) override { c_.make_groups(groups); }

 private:
  struct Pending {
    void* copy;  // device memory of its own
    std::size_t bytes;
    int peer;
  };
  void post_pending();  // inside an NCCL group
  void finish();        // waits for the stream, frees the sent copies
  std::unique_ptr<NcclComm> owned_;
  NcclComm& c_;
  void* stream_ = nullptr;  // cudaStream_t
  double timeout_s_;
  std::vector<Pending> pending_, posted_;
  int grouped_ = 0;
};

// The transport of one process per GPU, for callers built with or without CUDA: an NcclComm
// on `device` through rv, behind an NcclTransport. Throws Error (one line) in a build without
// CUDA or where NCCL cannot start.
std::unique_ptr<Comm> make_nccl_transport(Rendezvous& rv, int device, double timeout_s = 60.0);

}  // namespace onegpu::trainer
