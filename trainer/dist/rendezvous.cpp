#include "trainer/dist/rendezvous.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "trainer/error.h"

namespace onegpu::trainer {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint32_t kRendezvousMagic = 0x4F475055;  // "OGPU": a peer of this program, not a stray client

std::string where(const LaunchEnv& e) { return e.master_addr + ":" + std::to_string(e.master_port); }
std::string secs(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g s", s);
  return b;
}

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? (int)left : 0;
}

// Whole buffers, or false at the deadline or when the peer is gone.
bool send_all(int fd, const void* p, std::size_t n, Clock::time_point deadline) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    pollfd pf{fd, POLLOUT, 0};
    if (poll(&pf, 1, ms_left(deadline)) <= 0) return false;
    const ssize_t k = ::send(fd, c, n, MSG_NOSIGNAL);
    if (k <= 0) {
      if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      return false;
    }
    c += k;
    n -= (std::size_t)k;
  }
  return true;
}
bool recv_all(int fd, void* p, std::size_t n, Clock::time_point deadline) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    pollfd pf{fd, POLLIN, 0};
    if (poll(&pf, 1, ms_left(deadline)) <= 0) return false;
    const ssize_t k = ::recv(fd, c, n, 0);
    if (k <= 0) {
      if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      return false;
    }
    c += k;
    n -= (std::size_t)k;
  }
  return true;
}

// A message: magic, length, bytes.
bool send_msg(int fd, const std::vector<std::uint8_t>& b, Clock::time_point deadline) {
  const std::uint32_t head[2] = {htonl(kRendezvousMagic), htonl((std::uint32_t)b.size())};
  return send_all(fd, head, sizeof head, deadline) && send_all(fd, b.data(), b.size(), deadline);
}
bool recv_msg(int fd, std::vector<std::uint8_t>& b, Clock::time_point deadline) {
  std::uint32_t head[2];
  if (!recv_all(fd, head, sizeof head, deadline) || ntohl(head[0]) != kRendezvousMagic) return false;
  const std::uint32_t n = ntohl(head[1]);
  if (n > (64u << 20)) return false;  // small exchanges only
  b.resize(n);
  return recv_all(fd, b.data(), n, deadline);
}

addrinfo* resolve(const LaunchEnv& e, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(e.master_port);
  const int rc = getaddrinfo(e.master_addr.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) throw Error("rendezvous: cannot resolve MASTER_ADDR '" + e.master_addr + "': " + gai_strerror(rc));
  return res;
}

void no_delay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

Rendezvous::Rendezvous(const LaunchEnv& env, double timeout_s) : env_(env), timeout_s_(timeout_s) {
  if (env.world <= 1) return;
  try {
    connect();
  } catch (...) {
    close_all();
    throw;
  }
}

void Rendezvous::connect() {
  const LaunchEnv& env = env_;
  const double timeout_s = timeout_s_;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  addrinfo* res = resolve(env, env.rank == 0);
  if (env.rank == 0) {
    std::string why = "no address";
    for (addrinfo* a = res; a && listen_fd_ < 0; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, env.world) == 0) {
        listen_fd_ = fd;
      } else {
        why = std::strerror(errno);
        ::close(fd);
      }
    }
    freeaddrinfo(res);
    if (listen_fd_ < 0) throw Error("rendezvous: rank 0 cannot listen at " + where(env) + ": " + why);
    peers_.assign((std::size_t)env.world, -1);
    int joined = 1;
    while (joined < env.world) {
      pollfd pf{listen_fd_, POLLIN, 0};
      const int ready = poll(&pf, 1, ms_left(deadline));
      if (ready <= 0) {
        std::string missing;
        for (int r = 1; r < env.world; ++r)
          if (peers_[(std::size_t)r] < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        throw Error("rendezvous: rank 0 heard from " + std::to_string(joined) + " of " + std::to_string(env.world) +
                    " ranks within " + secs(timeout_s) + " (missing: " + missing + ") at " + where(env));
      }
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      no_delay(fd);
      // Hello: the peer's rank and the world it was told.
      std::vector<std::uint8_t> hello;
      std::uint32_t rw[2] = {0, 0};
      if (!recv_msg(fd, hello, deadline) || hello.size() != sizeof rw) {
        ::close(fd);  // not one of ours (a port scan, a stale run): keep waiting
        continue;
      }
      std::memcpy(rw, hello.data(), sizeof rw);
      const int r = (int)ntohl(rw[0]), w = (int)ntohl(rw[1]);
      std::string bad;
      if (w != env.world) bad = "rank " + std::to_string(r) + " was told WORLD_SIZE " + std::to_string(w) + ", rank 0 " + std::to_string(env.world);
      else if (r <= 0 || r >= env.world) bad = "a peer claims rank " + std::to_string(r);
      else if (peers_[(std::size_t)r] >= 0) bad = "two processes claim rank " + std::to_string(r);
      if (!bad.empty()) {
        ::close(fd);
        throw Error("rendezvous: " + bad + " (at " + where(env) + ")");
      }
      peers_[(std::size_t)r] = fd;
      ++joined;
    }
    // Everyone is here: say so, so no rank starts before all are known.
    for (int r = 1; r < env.world; ++r)
      if (!send_msg(peers_[(std::size_t)r], {}, deadline)) throw Error("rendezvous: rank " + std::to_string(r) + " left before the start");
    return;
  }
  // Any other rank: connect (rank 0 may not be listening yet), say hello, wait for the start.
  std::string why = "timed out";
  int fd = -1;
  while (fd < 0) {
    for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
      const int s = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (s < 0) continue;
      if (::connect(s, a->ai_addr, a->ai_addrlen) == 0) {
        fd = s;
      } else {
        why = std::strerror(errno);
        ::close(s);
      }
    }
    if (fd >= 0 || ms_left(deadline) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, ms_left(deadline))));
  }
  freeaddrinfo(res);
  if (fd < 0)
    throw Error("rendezvous: rank " + std::to_string(env.rank) + " could not reach rank 0 at " + where(env) + " within " +
                secs(timeout_s) + " (" + why + ")");
  no_delay(fd);
  peers_.assign(1, fd);
  const std::uint32_t rw[2] = {htonl((std::uint32_t)env.rank), htonl((std::uint32_t)env.world)};
  std::vector<std::uint8_t> hello(sizeof rw), start;
  std::memcpy(hello.data(), rw, sizeof rw);
  if (!send_msg(fd, hello, deadline) || !recv_msg(fd, start, deadline))
    throw Error("rendezvous: rank " + std::to_string(env.rank) + " reached " + where(env) +
                " but rank 0 did not start the run within " + secs(timeout_s) + " (see rank 0's message)");
}

Rendezvous::~Rendezvous() { close_all(); }

std::string Rendezvous::local_host() const {
  if (env_.rank == 0 || peers_.empty()) return env_.master_addr;
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  char host[INET6_ADDRSTRLEN] = {};
  if (::getsockname(peers_[0], reinterpret_cast<sockaddr*>(&a), &n) != 0) return env_.master_addr;
  const void* ip = a.ss_family == AF_INET6 ? (const void*)&reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr
                                           : (const void*)&reinterpret_cast<sockaddr_in*>(&a)->sin_addr;
  if (!inet_ntop(a.ss_family, ip, host, sizeof host)) return env_.master_addr;
  return host;
}

void Rendezvous::close_all() {
  for (int fd : peers_)
    if (fd >= 0) ::close(fd);
  peers_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

std::vector<std::uint8_t> Rendezvous::broadcast(const std::vector<std::uint8_t>& bytes) {
  if (env_.world <= 1) return bytes;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  if (env_.rank == 0) {
    for (int r = 1; r < env_.world; ++r)
      if (!send_msg(peers_[(std::size_t)r], bytes, deadline))
        throw Error("rendezvous: broadcast to rank " + std::to_string(r) + " failed (it left, or " + secs(timeout_s_) + " passed)");
    return bytes;
  }
  std::vector<std::uint8_t> out;
  if (!recv_msg(peers_[0], out, deadline))
    throw Error("rendezvous: rank " + std::to_string(env_.rank) + " got no broadcast from rank 0 within " + secs(timeout_s_));
  return out;
}

std::vector<std::vector<std::uint8_t>> Rendezvous::gather(const std::vector<std::uint8_t>& bytes) {
  if (env_.world <= 1) return {bytes};
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  if (env_.rank != 0) {
    if (!send_msg(peers_[0], bytes, deadline))
      throw Error("rendezvous: rank " + std::to_string(env_.rank) + " could not send to rank 0 within " + secs(timeout_s_));
    return {};
  }
  std::vector<std::vector<std::uint8_t>> out((std::size_t)env_.world);
  out[0] = bytes;
  for (int r = 1; r < env_.world; ++r)
    if (!recv_msg(peers_[(std::size_t)r], out[(std::size_t)r], deadline))
      throw Error("rendezvous: rank 0 got nothing from rank " + std::to_string(r) + " within " + secs(timeout_s_));
  return out;
}

}  // namespace onegpu::trainer
