#pragma once
// Clocks the drawing benchmarks share. On a machine whose cores are shared, wall time per frame
// says as much about the neighbours as about us, so every frame is also timed on two CPU
// clocks: the whole process (this thread plus llvmpipe's raster threads and any trainer
// workers) and this thread alone (what building the frame costs before the rasteriser runs).
// The load average is printed at the start and the end so a reader can tell a quiet run
// from a crowded one. A third CPU clock sums llvmpipe's raster threads alone, so that what is
// left (process - this thread - raster) is other work of ours, such as a background job.
#include <dirent.h>
#include <sys/types.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace onegpu::bench {

inline double clock_ms(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}
inline double wall_ms() { return clock_ms(CLOCK_MONOTONIC); }
inline double process_cpu_ms() { return clock_ms(CLOCK_PROCESS_CPUTIME_ID); }
inline double thread_cpu_ms() { return clock_ms(CLOCK_THREAD_CPUTIME_ID); }

// CPU time of the process's threads whose name starts with `prefix` ("llvmpipe" for Mesa's
// raster threads), read from Linux's per-thread CPU clocks. The threads are found once, by
// name, in /proc/self/task: call find() after the GL context has started them.
class NamedThreadsClock {
 public:
  int find(const char* prefix) {
    clocks_.clear();
    if (DIR* d = opendir("/proc/self/task")) {
      while (const dirent* e = readdir(d)) {
        const int tid = std::atoi(e->d_name);
        if (tid <= 0) continue;
        char path[64], name[32] = "";
        std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
        if (FILE* f = std::fopen(path, "r")) {
          if (!std::fgets(name, sizeof name, f)) name[0] = 0;
          std::fclose(f);
        }
        // The kernel's CPU clock of one thread (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)).
        if (!std::strncmp(name, prefix, std::strlen(prefix)))
          clocks_.push_back(static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6));
      }
      closedir(d);
    }
    return static_cast<int>(clocks_.size());
  }
  double ms() const {
    double sum = 0;
    for (clockid_t c : clocks_) sum += clock_ms(c);
    return sum;
  }

 private:
  std::vector<clockid_t> clocks_;
};

// One frame on all the clocks (raster: the named threads, when a clock for them is given).
struct FrameTimes {
  double wall = 0, cpu = 0, thread = 0, raster = 0;
};

class FrameTimer {
 public:
  explicit FrameTimer(const NamedThreadsClock* raster = nullptr) : raster_(raster) {}
  void start() { w_ = wall_ms(), c_ = process_cpu_ms(), t_ = thread_cpu_ms(), r_ = raster_ms(); }
  FrameTimes stop() const {
    return {wall_ms() - w_, process_cpu_ms() - c_, thread_cpu_ms() - t_, raster_ms() - r_};
  }

 private:
  double raster_ms() const { return raster_ ? raster_->ms() : 0.0; }
  const NamedThreadsClock* raster_;
  double w_ = 0, c_ = 0, t_ = 0, r_ = 0;
};

// Mean and worst of a series of frames, on each clock (the worst of each clock on its own).
struct FrameStats {
  int n = 0;
  FrameTimes sum, worst;
  int worst_frame = -1;  // index of the frame with the worst wall time
  void add(const FrameTimes& f) {
    if (f.wall > worst.wall) worst_frame = n;
    ++n;
    sum.wall += f.wall, sum.cpu += f.cpu, sum.thread += f.thread, sum.raster += f.raster;
    if (f.wall > worst.wall) worst.wall = f.wall;
    if (f.cpu > worst.cpu) worst.cpu = f.cpu;
    if (f.thread > worst.thread) worst.thread = f.thread;
    if (f.raster > worst.raster) worst.raster = f.raster;
  }
  FrameTimes mean() const {
    const double k = n > 0 ? 1.0 / n : 0.0;
    return {sum.wall * k, sum.cpu * k, sum.thread * k, sum.raster * k};
  }
};

inline void print_load(const char* when) {
  double l[3] = {0, 0, 0};
  if (getloadavg(l, 3) == 3) std::printf("load average at %s: %.2f %.2f %.2f\n", when, l[0], l[1], l[2]);
}

}  // namespace onegpu::bench
