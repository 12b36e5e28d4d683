#include "trainer/dist/socket_comm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>

#include "trainer/error.h"

namespace onegpu::trainer {

// Names of their own: unity builds put this file in one unit with rendezvous.cpp.
namespace {

using ScClock = std::chrono::steady_clock;
constexpr std::uint64_t kScMagic = 0x4F47505553434F4Dull;  // "OGPUSCOM": a message of this transport

std::string sc_secs(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g s", s);
  return b;
}
ScClock::time_point sc_after(double s) {
  return ScClock::now() + std::chrono::duration_cast<ScClock::duration>(std::chrono::duration<double>(s));
}
int sc_ms_left(ScClock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - ScClock::now()).count();
  return left > 0 ? (int)std::min<long long>(left, 1 << 30) : 0;
}
void sc_put64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (std::uint8_t)(v >> (8 * i));
}
std::uint64_t sc_get64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= (std::uint64_t)p[i] << (8 * i);
  return v;
}
void sc_tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}
// Whole blocking-style exchange on a non-blocking socket during set-up.
bool sc_io_all(int fd, void* p, std::size_t n, bool out, ScClock::time_point deadline) {
  auto* c = static_cast<std::uint8_t*>(p);
  while (n > 0) {
    pollfd pf{fd, (short)(out ? POLLOUT : POLLIN), 0};
    if (poll(&pf, 1, sc_ms_left(deadline)) <= 0) return false;
    const ssize_t k = out ? ::send(fd, c, n, MSG_NOSIGNAL) : ::recv(fd, c, n, 0);
    if (k <= 0) {
      if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      return false;
    }
    c += k;
    n -= (std::size_t)k;
  }
  return true;
}

}  // namespace

SocketComm::SocketComm(Rendezvous& rv, double timeout_s) : rank_(rv.rank()), world_(rv.world()), timeout_s_(timeout_s) {
  peers_.resize((std::size_t)world_);
  if (world_ <= 1) return;
  const auto deadline = sc_after(timeout_s);
  // 1. A listening socket of this rank's own, on the interface that reaches the others.
  const std::string host = rv.local_host();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), "0", &hints, &res); rc != 0)
    throw Error("socket comm: rank " + std::to_string(rank_) + " cannot resolve its address '" + host + "': " + gai_strerror(rc));
  int lfd = -1;
  for (addrinfo* a = res; a && lfd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, world_) == 0)
      lfd = fd;
    else
      ::close(fd);
  }
  freeaddrinfo(res);
  if (lfd < 0) throw Error("socket comm: rank " + std::to_string(rank_) + " cannot listen at " + host + ": " + std::strerror(errno));
  sockaddr_storage sa{};
  socklen_t sl = sizeof sa;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&sa), &sl);
  const int port = ntohs(sa.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port
                                                  : reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
  try {
    // 2. Every rank's "host port", through rank 0, to every rank.
    const std::string me = host + " " + std::to_string(port);
    std::vector<std::uint8_t> table;
    for (const auto& b : rv.gather({me.begin(), me.end()})) {
      table.insert(table.end(), b.begin(), b.end());
      table.push_back('\n');
    }
    table = rv.broadcast(table);
    std::vector<std::pair<std::string, std::string>> at;
    for (std::size_t i = 0, j; i < table.size(); i = j + 1) {
      j = std::find(table.begin() + (long)i, table.end(), (std::uint8_t)'\n') - table.begin();
      const std::string line(table.begin() + (long)i, table.begin() + (long)j);
      const std::size_t sp = line.rfind(' ');
      at.emplace_back(line.substr(0, sp), line.substr(sp + 1));
    }
    if ((int)at.size() != world_) throw Error("socket comm: the address table has " + std::to_string(at.size()) + " ranks");
    // 3. Rank j connects to every lower rank and says who it is; it accepts every higher one.
    for (int p = 0; p < rank_; ++p) {
      addrinfo h{};
      h.ai_family = AF_UNSPEC;
      h.ai_socktype = SOCK_STREAM;
      addrinfo* r = nullptr;
      if (getaddrinfo(at[(std::size_t)p].first.c_str(), at[(std::size_t)p].second.c_str(), &h, &r) != 0)
        throw Error("socket comm: rank " + std::to_string(rank_) + " cannot resolve rank " + std::to_string(p) + "'s address " +
                    at[(std::size_t)p].first);
      int fd = -1;
      while (fd < 0 && sc_ms_left(deadline) > 0) {
        for (addrinfo* a = r; a && fd < 0; a = a->ai_next) {
          const int s = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
          if (s < 0) continue;
          if (::connect(s, a->ai_addr, a->ai_addrlen) == 0)
            fd = s;
          else
            ::close(s);
        }
        if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      freeaddrinfo(r);
      if (fd < 0)
        throw Error("socket comm: rank " + std::to_string(rank_) + " could not connect to rank " + std::to_string(p) + " at " +
                    at[(std::size_t)p].first + ":" + at[(std::size_t)p].second + " within " + sc_secs(timeout_s));
      sc_tune(fd);
      peers_[(std::size_t)p].fd = fd;
      std::uint8_t hello[16];
      sc_put64(hello, kScMagic);
      sc_put64(hello + 8, (std::uint64_t)rank_);
      if (!sc_io_all(fd, hello, sizeof hello, true, deadline))
        throw Error("socket comm: rank " + std::to_string(rank_) + " could not greet rank " + std::to_string(p));
    }
    for (int joined = rank_ + 1; joined < world_;) {
      pollfd pf{lfd, POLLIN, 0};
      if (poll(&pf, 1, sc_ms_left(deadline)) <= 0) {
        std::string missing;
        for (int p = rank_ + 1; p < world_; ++p)
          if (peers_[(std::size_t)p].fd < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(p);
        throw Error("socket comm: rank " + std::to_string(rank_) + " heard from no rank " + missing + " within " + sc_secs(timeout_s) +
                    " (they stopped, or cannot reach " + host + ")");
      }
      const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      sc_tune(fd);
      std::uint8_t hello[16];
      const std::uint64_t who = sc_io_all(fd, hello, sizeof hello, false, deadline) && sc_get64(hello) == kScMagic ? sc_get64(hello + 8) : 0;
      if (who <= (std::uint64_t)rank_ || who >= (std::uint64_t)world_ || peers_[who].fd >= 0) {
        ::close(fd);  // a stray or duplicate connection
        continue;
      }
      peers_[who].fd = fd;
      ++joined;
    }
  } catch (...) {
    ::close(lfd);
    for (Peer& p : peers_)
      if (p.fd >= 0) ::close(p.fd);
    throw;
  }
  ::close(lfd);
}

SocketComm::~SocketComm() {
  // What was sent eagerly still reaches its peer; not when leaving on an error, whose message
  // should not wait for the timeout.
  if (std::uncaught_exceptions() == 0) {
    // Only the sends: a receive still posted (one that failed, say) writes into the caller's
    // buffer, which may be gone by now.
    for (Peer& p : peers_) p.in.clear();
    try {
      flush();
    } catch (...) {
    }
  }
  for (Peer& p : peers_)
    if (p.fd >= 0) ::close(p.fd);
}

void SocketComm::check_peer(int peer, const char* what) const {
  if (peer < 0 || peer >= world_ || peer == rank_)
    throw Error(std::string("socket comm: ") + what + " rank " + std::to_string(rank_) + " to rank " + std::to_string(peer) +
                " of " + std::to_string(world_));
}

void SocketComm::send(const void* data, std::size_t bytes, int peer) {
  check_peer(peer, "send from");
  Out o;
  o.buf.resize(16 + bytes);
  sc_put64(o.buf.data(), kScMagic);
  sc_put64(o.buf.data() + 8, bytes);
  if (bytes) std::memcpy(o.buf.data() + 16, data, bytes);
  peers_[(std::size_t)peer].out.push_back(std::move(o));
  sent_ += bytes;
  pump_out(peer);  // as far as the kernel takes it now; the rest moves in later waits
}

void SocketComm::recv(void* data, std::size_t bytes, int peer) {
  check_peer(peer, "receive at");
  In in;
  in.data = static_cast<std::uint8_t*>(data);
  in.bytes = bytes;
  peers_[(std::size_t)peer].in.push_back(in);
  received_ += bytes;
  if (!grouped_) progress(Until::RecvsDone);
}

void SocketComm::group(const std::function<void()>& fn) {
  ++grouped_;
  try {
    fn();
  } catch (...) {
    --grouped_;
    throw;
  }
  if (--grouped_ == 0) progress(Until::AllDone);
}

void SocketComm::flush() { progress(Until::AllDone); }

std::size_t SocketComm::member_index(std::span<const int> members, const char* what) const {
  const auto self = std::find(members.begin(), members.end(), rank_);
  if (self == members.end()) throw Error(std::string("socket comm: ") + what + " without rank " + std::to_string(rank_) + " among its members");
  return (std::size_t)(self - members.begin());
}

void SocketComm::reduce_scatter_sum(float* data, std::span<const std::int64_t> bounds, std::span<const int> members) {
  const std::size_t m = members.size(), me = member_index(members, "reduce-scatter");
  if (bounds.size() != m + 1) throw Error("socket comm: a reduce-scatter's pieces do not match its members");
  const std::int64_t a = bounds[me], n = bounds[me + 1] - a;
  if (m <= 1) return;
  std::vector<std::vector<float>> theirs(m);
  group([&] {
    for (std::size_t i = 0; i < m; ++i)
      if (i != me && bounds[i + 1] > bounds[i])
        send(data + bounds[i], (std::size_t)(bounds[i + 1] - bounds[i]) * sizeof(float), members[i]);
    for (std::size_t i = 0; i < m; ++i)
      if (i != me && n > 0) {
        theirs[i].resize((std::size_t)n);
        recv(theirs[i].data(), (std::size_t)n * sizeof(float), members[i]);
      }
  });
  if (n <= 0) return;
  // acc = first member's; acc += each next, as the virtual ranks' reduce-scatter adds.
  float* out = data + a;
  std::vector<float> mine;
  if (me != 0) {
    mine.assign(out, out + n);
    std::copy_n(theirs[0].data(), n, out);
  }
  for (std::size_t i = 1; i < m; ++i) {
    const float* x = i == me ? mine.data() : theirs[i].data();
    for (std::int64_t j = 0; j < n; ++j) out[j] += x[j];
  }
}

void SocketComm::all_gather(void* data, std::size_t elem, std::span<const std::int64_t> bounds, std::span<const int> members) {
  const std::size_t m = members.size(), me = member_index(members, "all-gather");
  if (bounds.size() != m + 1) throw Error("socket comm: an all-gather's pieces do not match its members");
  if (m <= 1) return;
  auto* d = static_cast<std::uint8_t*>(data);
  auto bytes = [&](std::size_t i) { return (std::size_t)(bounds[i + 1] - bounds[i]) * elem; };
  group([&] {
    for (std::size_t i = 0; i < m; ++i)
      if (i != me && bytes(me) > 0) send(d + (std::size_t)bounds[me] * elem, bytes(me), members[i]);
    for (std::size_t i = 0; i < m; ++i)
      if (i != me && bytes(i) > 0) recv(d + (std::size_t)bounds[i] * elem, bytes(i), members[i]);
  });
}

void SocketComm::all_reduce_sum(float* data, std::int64_t n, std::span<const int> members) {
  const std::size_t m = members.size();
  const auto self = members.begin() + (long)member_index(members, "all-reduce");
  if (m <= 1 || n <= 0) return;
  const std::size_t bytes = (std::size_t)n * sizeof(float);
  std::vector<std::vector<float>> theirs(m);
  group([&] {
    for (std::size_t i = 0; i < m; ++i)
      if (members[i] != rank_) send(data, bytes, members[i]);
    for (std::size_t i = 0; i < m; ++i)
      if (members[i] != rank_) {
        theirs[i].resize((std::size_t)n);
        recv(theirs[i].data(), bytes, members[i]);
      }
  });
  // The sum in member order, as the virtual ranks take it: acc = first; acc += each next.
  const std::size_t me = (std::size_t)(self - members.begin());
  auto src = [&](std::size_t i) -> const float* { return i == me ? nullptr : theirs[i].data(); };
  std::vector<float> mine;
  if (me != 0) mine.assign(data, data + n);  // data becomes the accumulator
  const float* first = me == 0 ? data : src(0);
  if (me != 0) std::copy_n(first, n, data);
  for (std::size_t i = 1; i < m; ++i) {
    const float* x = i == me ? mine.data() : src(i);
    for (std::int64_t j = 0; j < n; ++j) data[j] += x[j];
  }
}

void SocketComm::pump_out(int p) {
  Peer& P = peers_[(std::size_t)p];
  while (!P.out.empty()) {
    Out& o = P.out.front();
    const ssize_t k = ::send(P.fd, o.buf.data() + o.at, o.buf.size() - o.at, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      throw Error("socket comm: rank " + std::to_string(rank_) + " lost its connection to rank " + std::to_string(p) + " (" +
                  std::strerror(errno) + "; it stopped or failed: see its message)");
    }
    o.at += (std::size_t)k;
    if (o.at == o.buf.size()) P.out.pop_front();
  }
}

void SocketComm::pump_in(int p) {
  Peer& P = peers_[(std::size_t)p];
  while (!P.in.empty()) {
    In& in = P.in.front();
    const bool head = in.head_at < sizeof in.head;
    std::uint8_t* dst = head ? in.head + in.head_at : in.data + in.at;
    const std::size_t want = head ? sizeof in.head - in.head_at : in.bytes - in.at;
    if (want > 0) {
      const ssize_t k = ::recv(P.fd, dst, want, MSG_DONTWAIT);
      if (k == 0)
        throw Error("socket comm: rank " + std::to_string(p) + " closed its connection while rank " + std::to_string(rank_) +
                    " waited for " + std::to_string(in.bytes) + " bytes from it (it stopped or failed: see its message)");
      if (k < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        throw Error("socket comm: rank " + std::to_string(rank_) + " lost its connection to rank " + std::to_string(p) + " (" +
                    std::strerror(errno) + "; it stopped or failed: see its message)");
      }
      (head ? in.head_at : in.at) += (std::size_t)k;
      if (head && in.head_at == sizeof in.head) {
        if (sc_get64(in.head) != kScMagic) throw Error("socket comm: rank " + std::to_string(rank_) + " got a garbled message from rank " + std::to_string(p));
        const std::uint64_t n = sc_get64(in.head + 8);
        if (n != in.bytes)
          throw Error("socket comm: rank " + std::to_string(p) + " sent " + std::to_string(n) + " bytes where rank " +
                      std::to_string(rank_) + " expected " + std::to_string(in.bytes) + " (their programs disagree)");
      }
      continue;
    }
    if (in.head_at == sizeof in.head) P.in.pop_front();
  }
}

void SocketComm::progress(Until until) {
  auto pending = [&] {
    for (const Peer& p : peers_)
      if (!p.in.empty() || (until == Until::AllDone && !p.out.empty())) return true;
    return false;
  };
  auto deadline = sc_after(timeout_s_);
  std::vector<pollfd> pf;
  std::vector<int> who;
  while (true) {
    for (int p = 0; p < world_; ++p) {
      if (p == rank_) continue;
      pump_out(p);
      pump_in(p);
    }
    if (!pending()) return;
    pf.clear();
    who.clear();
    for (int p = 0; p < world_; ++p) {
      const Peer& P = peers_[(std::size_t)p];
      short ev = (short)((P.out.empty() ? 0 : POLLOUT) | (P.in.empty() ? 0 : POLLIN));
      if (!ev) continue;
      pf.push_back({P.fd, ev, 0});
      who.push_back(p);
    }
    const int ready = poll(pf.data(), pf.size(), sc_ms_left(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) stalled();
    deadline = sc_after(timeout_s_);  // bytes moved (or a peer closed: the pumps say so)
  }
}

void SocketComm::stalled() {
  for (int p = 0; p < world_; ++p) {
    const Peer& P = peers_[(std::size_t)p];
    if (!P.in.empty())
      throw Error("socket comm: rank " + std::to_string(rank_) + " waited " + sc_secs(timeout_s_) + " for " +
                  std::to_string(P.in.front().bytes) + " bytes from rank " + std::to_string(p) +
                  " (it stopped, hangs, or its program sends something else)");
  }
  for (int p = 0; p < world_; ++p)
    if (!peers_[(std::size_t)p].out.empty())
      throw Error("socket comm: rank " + std::to_string(rank_) + " could not hand rank " + std::to_string(p) + " its bytes within " +
                  sc_secs(timeout_s_) + " (it stopped reading)");
  throw Error("socket comm: rank " + std::to_string(rank_) + " stalled");
}

}  // namespace onegpu::trainer
