// The worker pool: every chunk runs exactly once per call, across many back-to-back calls of
// different sizes (the pattern the model produces).
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "trainer/ops/thread_pool.h"

using namespace onegpu::trainer;

TEST(ThreadPool, EveryChunkRunsExactlyOncePerCall) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    std::vector<std::atomic<int>> hits(64);
    long total = 0;
    for (int call = 0; call < 3000; ++call) {
      int n = 1 + call % 37;
      for (int i = 0; i < n; ++i) hits[i].store(0);
      pool.parallel_for(n, [&](int i) { hits[i].fetch_add(1); });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "call " << call << " chunk " << i;
      total += n;
    }
    EXPECT_GT(total, 0);
  }
}

// A system that refuses a thread (here an address-space limit too small for the stacks) gets one
// Error naming what could not start, not an abort from destroying the threads already running.
// Runs in a forked child so the limit stays there; AddressSanitizer reserves terabytes of
// address space, so the limit cannot be tried under it.
#if defined(__linux__) && !defined(ONEGPU_SANITIZED)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "trainer/error.h"

namespace {
long vm_size_kb() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::stol(line.substr(7));
  return -1;
}
}  // namespace

TEST(ThreadPool, ThreadsTheSystemRefusesAreOneErrorNotAnAbort) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Room for about two default 8 MB stacks above what the process maps now.
    const rlim_t limit = (rlim_t)(vm_size_kb() + 20 * 1024) * 1024;
    rlimit rl{limit, limit};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
    try {
      onegpu::trainer::ThreadPool pool(64);
      _exit(1);  // every thread started: the limit did not bite
    } catch (const onegpu::trainer::Error& e) {
      _exit(std::string(e.what()).find("could not start") == 0 ? 0 : 4);
    } catch (...) {
      _exit(2);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no thread was refused, 2: another exception, 3: setrlimit, 4: wrong message";
}
#endif
