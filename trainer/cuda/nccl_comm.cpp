// NCCL through dlopen (nccl_comm.h). Compiled only in CUDA builds.
#ifdef ONEGPU_HAVE_CUDA
#include "trainer/cuda/nccl_comm.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "trainer/error.h"

namespace onegpu::trainer {

struct NcclComm::Lib {
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) init_rank = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclCommSplit) split = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclCommGetAsyncError) async_error = nullptr;
  decltype(&ncclCommAbort) abort = nullptr;
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
    l.split = reinterpret_cast<decltype(l.split)>(sym("ncclCommSplit"));  // NCCL 2.18 on
    l.all_reduce = reinterpret_cast<decltype(l.all_reduce)>(sym("ncclAllReduce"));
    l.send = reinterpret_cast<decltype(l.send)>(sym("ncclSend"));
    l.recv = reinterpret_cast<decltype(l.recv)>(sym("ncclRecv"));
    l.group_start = reinterpret_cast<decltype(l.group_start)>(sym("ncclGroupStart"));
    l.group_end = reinterpret_cast<decltype(l.group_end)>(sym("ncclGroupEnd"));
    l.error_string = reinterpret_cast<decltype(l.error_string)>(sym("ncclGetErrorString"));
    l.async_error = reinterpret_cast<decltype(l.async_error)>(sym("ncclCommGetAsyncError"));
    l.abort = reinterpret_cast<decltype(l.abort)>(sym("ncclCommAbort"));
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
  for (auto& [members, c] : groups_)
    if (c) lib_.destroy(static_cast<ncclComm_t>(c));
  if (comm_) lib_.destroy(static_cast<ncclComm_t>(comm_));
}

std::string NcclComm::async_error() const {
  auto of = [&](void* c) -> std::string {
    ncclResult_t r = ncclSuccess;
    if (!c || lib_.async_error(static_cast<ncclComm_t>(c), &r) != ncclSuccess) return "";
    return r == ncclSuccess || r == ncclInProgress ? "" : lib_.error_string(r);
  };
  std::string e = of(comm_);
  for (const auto& [members, c] : groups_)
    if (e.empty()) e = of(c);
  return e;
}

void NcclComm::abort() {
  for (auto& [members, c] : groups_)
    if (c) lib_.abort(static_cast<ncclComm_t>(c)), c = nullptr;
  if (comm_) lib_.abort(static_cast<ncclComm_t>(comm_)), comm_ = nullptr;
}

namespace {
bool whole_world(std::span<const int> members, int world) {
  if ((int)members.size() != world) return false;
  for (int i = 0; i < world; ++i)
    if (members[(std::size_t)i] != i) return false;
  return true;
}
}  // namespace

void NcclComm::make_groups(const std::vector<std::vector<int>>& groups) {
  for (const std::vector<int>& g : groups) {
    // Made once, on members and others alike: every process skips the same ones.
    if (whole_world(g, world_) || !made_.insert(g).second) continue;
    int key = -1;
    for (std::size_t i = 0; i < g.size(); ++i)
      if (g[i] == rank_) key = (int)i;
    ncclComm_t sub = nullptr;
    check(lib_, lib_.split(static_cast<ncclComm_t>(comm_), key >= 0 ? 0 : NCCL_SPLIT_NOCOLOR, std::max(key, 0), &sub, nullptr),
          "a group's communicator");
    if (key >= 0) groups_[g] = sub;
  }
}

void* NcclComm::comm_of(std::span<const int> members) const {
  if (whole_world(members, world_)) return comm_;
  const auto it = groups_.find(std::vector<int>(members.begin(), members.end()));
  if (it == groups_.end())
    throw Error("NCCL: rank " + std::to_string(rank_) + " has no communicator for a group of " + std::to_string(members.size()) +
                " ranks (Comm::prepare_groups was not given it)");
  return it->second;
}

void NcclComm::all_reduce_sum(float* data, std::int64_t n, std::span<const int> members, void* stream) {
  if (n <= 0 || members.size() <= 1) return;
  check(lib_, lib_.all_reduce(data, data, (std::size_t)n, ncclFloat32, ncclSum, static_cast<ncclComm_t>(comm_of(members)),
                              static_cast<cudaStream_t>(stream)),
        "all-reduce");
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

namespace {
void cuda_check(cudaError_t e, int rank, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw Error("NCCL: rank " + std::to_string(rank) + ": " + what + ": " + cudaGetErrorString(e));
}
}  // namespace

NcclTransport::NcclTransport(std::unique_ptr<NcclComm> c, double timeout_s) : NcclTransport(*c, timeout_s) { owned_ = std::move(c); }

NcclTransport::NcclTransport(NcclComm& c, double timeout_s) : c_(c), timeout_s_(timeout_s) {
  cudaStream_t s = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), c_.rank(), "its stream");
  stream_ = s;
}

NcclTransport::~NcclTransport() {
  for (const Pending& p : pending_) cudaFree(p.copy);
  for (const Pending& p : posted_) cudaFree(p.copy);
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void NcclTransport::post_pending() {
  for (const Pending& p : pending_) {
    c_.send(p.copy, p.bytes, p.peer, stream_);
    posted_.push_back(p);
  }
  pending_.clear();
}

void NcclTransport::finish() {
  // Polled, not cudaStreamSynchronize: a peer that stopped leaves NCCL's kernels waiting for ever.
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 0;; ++polls) {
    const cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(stream_));
    if (e == cudaSuccess) break;
    if (e != cudaErrorNotReady) cuda_check(e, rank(), "its transfers failed");
    const std::string nccl = c_.async_error();
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!nccl.empty() || waited > timeout_s_) {
      c_.abort();
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g s", timeout_s_);
      throw Error("NCCL: rank " + std::to_string(rank()) +
                  (nccl.empty() ? " waited " + std::string(secs) + " for its transfers" : ": " + nccl) +
                  " (a peer stopped, hangs, or its program sends something else: see its message)");
    }
    if (polls > 100) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  for (const Pending& p : posted_) cudaFree(p.copy);
  posted_.clear();
}

void NcclTransport::all_reduce_sum(float* data, std::int64_t n, std::span<const int> members) {
  c_.all_reduce_sum(data, n, members, stream_);
  finish();
}

void NcclTransport::reduce_scatter_sum(float* data, std::span<const std::int64_t> bounds, std::span<const int> members) {
  if (bounds.size() != members.size() + 1) throw Error("NCCL: a reduce-scatter's pieces do not match its members");
  c_.all_reduce_sum(data + bounds.front(), bounds.back() - bounds.front(), members, stream_);
  finish();
}

void NcclTransport::all_gather(void* data, std::size_t elem, std::span<const std::int64_t> bounds, std::span<const int> members) {
  if (bounds.size() != members.size() + 1) throw Error("NCCL: an all-gather's pieces do not match its members");
  std::size_t me = members.size();
  for (std::size_t i = 0; i < members.size(); ++i)
    if (members[i] == rank()) me = i;
  if (me == members.size()) throw Error("NCCL: all-gather without rank " + std::to_string(rank()) + " among its members");
  auto* d = static_cast<std::uint8_t*>(data);
  auto bytes = [&](std::size_t i) { return (std::size_t)(bounds[i + 1] - bounds[i]) * elem; };
  group([&] {
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (i == me) continue;
      if (bytes(me)) c_.send(d + (std::size_t)bounds[me] * elem, bytes(me), members[i], stream_);
      if (bytes(i)) c_.recv(d + (std::size_t)bounds[i] * elem, bytes(i), members[i], stream_);
    }
  });
}

void NcclTransport::send(const void* data, std::size_t bytes, int peer) {
  if (grouped_) return c_.send(data, bytes, peer, stream_);
  Pending p{nullptr, bytes, peer};
  cuda_check(cudaMalloc(&p.copy, std::max<std::size_t>(bytes, 1)), rank(), "a send's buffer");
  const cudaError_t e = cudaMemcpy(p.copy, data, bytes, cudaMemcpyDefault);
  if (e != cudaSuccess) cudaFree(p.copy);
  cuda_check(e, rank(), "a send's copy");
  pending_.push_back(p);
}

void NcclTransport::recv(void* data, std::size_t bytes, int peer) {
  if (grouped_) return c_.recv(data, bytes, peer, stream_);
  c_.group([&] {
    post_pending();
    c_.recv(data, bytes, peer, stream_);
  });
  finish();
}

void NcclTransport::group(const std::function<void()>& fn) {
  if (grouped_) return fn();
  ++grouped_;
  try {
    c_.group([&] {
      post_pending();
      fn();
    });
  } catch (...) {
    --grouped_;
    throw;
  }
  --grouped_;
  finish();
}

void NcclTransport::flush() {
  if (!pending_.empty()) c_.group([&] { post_pending(); });
  finish();
}

std::unique_ptr<Comm> make_nccl_transport(Rendezvous& rv, int device, double timeout_s) {
  return std::make_unique<NcclTransport>(std::make_unique<NcclComm>(rv, device), timeout_s);
}

}  // namespace onegpu::trainer
#else  // no CUDA: the one thing a caller may ask for says why it cannot be had
#include "trainer/cuda/nccl_comm.h"
#include "trainer/error.h"

namespace onegpu::trainer {
std::unique_ptr<Comm> make_nccl_transport(Rendezvous&, int, double) {
  throw Error("one process per GPU needs NCCL, and this build has no CUDA backend (configure with nvcc present, ONEGPU_CUDA=ON)");
}
}  // namespace onegpu::trainer
#endif  // ONEGPU_HAVE_CUDA
