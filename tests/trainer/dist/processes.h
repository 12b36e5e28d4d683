#pragma once
// Real processes on localhost for the tests of one process per rank: a free port, a child
// running a function, its exit status.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <functional>

#include "trainer/dist/launch_env.h"

namespace onegpu::trainer::test {

// A port nobody listens on right now (the kernel's pick; freed again for the test to use).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(fd);
  return ntohs(a.sin_port);
}

inline LaunchEnv env(int rank, int world, int port) {
  LaunchEnv e;
  e.rank = rank;
  e.world = world;
  e.local_rank = rank;
  e.master_port = port;
  e.launcher = "torchrun";
  return e;
}

// Runs fn in a child process; its exit status is 0 when fn returned true.
inline pid_t spawn(const std::function<bool()>& fn) {
  const pid_t pid = fork();
  if (pid == 0) {
    bool ok = false;
    try {
      ok = fn();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child %d: %s\n", (int)getpid(), e.what());  // what a failing test needs
    } catch (...) {
    }
    _exit(ok ? 0 : 1);
  }
  return pid;
}
inline int exit_status(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace onegpu::trainer::test
