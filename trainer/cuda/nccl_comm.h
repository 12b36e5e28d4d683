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
// NCCL refuses two ranks on one GPU, so one GPU tests this path at world size 1 only.
// Built only with CUDA (ONEGPU_HAVE_CUDA); nothing here has yet run on a GPU.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

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

  // stream: a cudaStream_t (void* here, so this header needs no CUDA headers).
  void all_reduce_sum(float* data, std::int64_t n, void* stream);
  void send(const void* data, std::size_t bytes, int peer, void* stream);
  void recv(void* data, std::size_t bytes, int peer, void* stream);
  // fn's sends and receives as one grouped NCCL call (ncclGroupStart / ncclGroupEnd).
  void group(const std::function<void()>& fn);

  struct Lib;  // NCCL's entry points (nccl_comm.cpp)

 private:
  const Lib& lib_;
  void* comm_ = nullptr;  // ncclComm_t
  int rank_ = 0, world_ = 1;
};

// NcclComm behind the transport seam (trainer/dist/comm.h), its calls queued on one stream:
// what a process per GPU would hand ParallelOptions::comm. Not yet wired there: the trainer's
// per-process path runs CPU ranks only, and its small host-side exchanges (a step's losses,
// all_gather_bytes) need host memory, which NCCL does not take. All-reduce over the whole world
// only (a dp group inside a pipeline needs a communicator of its own, ncclCommSplit: not built).
// Never run on a GPU.
class NcclTransport final : public Comm {
 public:
  NcclTransport(NcclComm& c, void* stream) : c_(c), stream_(stream) {}
  int rank() const override { return c_.rank(); }
  int world() const override { return c_.world(); }
  void all_reduce_sum(float* data, std::int64_t n, std::span<const int> members) override;
  void send(const void* data, std::size_t bytes, int peer) override { c_.send(data, bytes, peer, stream_); }
  void recv(void* data, std::size_t bytes, int peer) override { c_.recv(data, bytes, peer, stream_); }
  void group(const std::function<void()>& fn) override { c_.group(fn); }
  void flush() override;  // waits for the stream

 private:
  NcclComm& c_;
  void* stream_;
};

}  // namespace onegpu::trainer
