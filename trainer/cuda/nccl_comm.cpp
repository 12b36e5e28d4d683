// NCCL through dlopen (nccl_comm.h). Compiled only in CUDA builds.
#ifdef ONEGPU_HAVE_CUDA
#include "trainer/cuda/nccl_comm.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstring>
#include <string>
#include <vector>

#include "trainer/error.h"

namespace onegpu::trainer {

struct NcclComm::Lib {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) init_rank = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
};

namespace {
void* open_nccl() {
  for (const char* name : {"libnccl.so.2", "/usr/local/cuda/lib/libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2",
                           "libnccl.so"})
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  throw Error("NCCL: libnccl.so.2 not found (install NCCL, or add its folder to LD_LIBRARY_PATH)");
}
}  // namespace

static const NcclComm::Lib& load_nccl() {
  static const NcclComm::Lib lib = [] {
    void* h = open_nccl();
    auto sym = [&](const char* n) {
      void* s = dlsym(h, n);
      if (!s) throw Error(std::string("NCCL: libnccl has no ") + n);
      return s;
    };
    NcclComm::Lib l;
    l.get_unique_id = reinterpret_cast<decltype(l.get_unique_id)>(sym("ncclGetUniqueId"));
    l.init_rank = reinterpret_cast<decltype(l.init_rank)>(sym("ncclCommInitRank"));
    l.destroy = reinterpret_cast<decltype(l.destroy)>(sym("ncclCommDestroy"));
    l.all_reduce = reinterpret_cast<decltype(l.all_reduce)>(sym("ncclAllReduce"));
    l.send = reinterpret_cast<decltype(l.send)>(sym("ncclSend"));
    l.recv = reinterpret_cast<decltype(l.recv)>(sym("ncclRecv"));
    l.group_start = reinterpret_cast<decltype(l.group_start)>(sym("ncclGroupStart"));
    l.group_end = reinterpret_cast<decltype(l.group_end)>(sym("ncclGroupEnd"));
    l.error_string = reinterpret_cast<decltype(l.error_string)>(sym("ncclGetErrorString"));
    return l;  // stays loaded for the life of the process
  }();
  return lib;
}

namespace {
void check(const NcclComm::Lib& l, ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error(std::string("NCCL: ") + what + ": " + l.error_string(r));
}
}  // namespace

NcclComm::NcclComm(Rendezvous& rv, int device) : lib_(load_nccl()), rank_(rv.rank()), world_(rv.world()) {
  if (cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    throw Error("NCCL: rank " + std::to_string(rank_) + " cannot use GPU " + std::to_string(device) +
                " (LOCAL_RANK picks the GPU; is there one per process?)");
  }
  ncclUniqueId id{};
  if (rank_ == 0) check(lib_, lib_.get_unique_id(&id), "unique id");
  std::vector<std::uint8_t> b(sizeof id);
  std::memcpy(b.data(), &id, sizeof id);
  b = rv.broadcast(b);
  if (b.size() != sizeof id) throw Error("NCCL: rank 0 sent an id of the wrong size");
  std::memcpy(&id, b.data(), sizeof id);
  ncclComm_t c = nullptr;
  check(lib_, lib_.init_rank(&c, world_, id, rank_), "communicator");
  comm_ = c;
}

NcclComm::~NcclComm() {
  if (comm_) lib_.destroy(static_cast<ncclComm_t>(comm_));
}

void NcclComm::all_reduce_sum(float* data, std::int64_t n, void* stream) {
  if (n <= 0) return;
  check(lib_, lib_.all_reduce(data, data, (std::size_t)n, ncclFloat32, ncclSum, static_cast<ncclComm_t>(comm_),
                              static_cast<cudaStream_t>(stream)),
        "all-reduce");
}

void NcclComm::send(const void* data, std::size_t bytes, int peer, void* stream) {
  check(lib_, lib_.send(data, bytes, ncclUint8, peer, static_cast<ncclComm_t>(comm_), static_cast<cudaStream_t>(stream)),
        "send");
}

void NcclComm::recv(void* data, std::size_t bytes, int peer, void* stream) {
  check(lib_, lib_.recv(data, bytes, ncclUint8, peer, static_cast<ncclComm_t>(comm_), static_cast<cudaStream_t>(stream)),
        "recv");
}

void NcclComm::group(const std::function<void()>& fn) {
  check(lib_, lib_.group_start(), "group start");
  try {
    fn();
  } catch (...) {
    lib_.group_end();
    throw;
  }
  check(lib_, lib_.group_end(), "group end");
}

void NcclTransport::all_reduce_sum(float* data, std::int64_t n, std::span<const int> members) {
  if ((int)members.size() != world())
    throw Error("NCCL: an all-reduce over " + std::to_string(members.size()) + " of " + std::to_string(world()) +
                " ranks needs a communicator of its own (not built)");
  c_.all_reduce_sum(data, n, stream_);
}

void NcclTransport::flush() {
  if (cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)) != cudaSuccess) {
    cudaGetLastError();
    throw Error("NCCL: rank " + std::to_string(rank()) + "'s stream failed while its transfers ran");
  }
}

}  // namespace onegpu::trainer
#endif  // ONEGPU_HAVE_CUDA
