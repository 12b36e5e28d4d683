#pragma once
// Clocks the drawing benchmarks share. On a machine whose cores are shared, wall time per frame
// says as much about the neighbours as about us, so every frame is also timed on two CPU
// clocks: the whole process (this thread plus llvmpipe's raster threads and any trainer
// workers) and this thread alone (what building the frame costs before the rasteriser runs).
// The load average is printed at the start and the end so a reader can tell a quiet run
// from a crowded one.
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace onegpu::bench {

inline double clock_ms(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}
inline double wall_ms() { return clock_ms(CLOCK_MONOTONIC); }
inline double process_cpu_ms() { return clock_ms(CLOCK_PROCESS_CPUTIME_ID); }
inline double thread_cpu_ms() { return clock_ms(CLOCK_THREAD_CPUTIME_ID); }

// One frame on all three clocks.
struct FrameTimes {
  double wall = 0, cpu = 0, thread = 0;
};

class FrameTimer {
 public:
  void start() { w_ = wall_ms(), c_ = process_cpu_ms(), t_ = thread_cpu_ms(); }
  FrameTimes stop() const { return {wall_ms() - w_, process_cpu_ms() - c_, thread_cpu_ms() - t_}; }

 private:
  double w_ = 0, c_ = 0, t_ = 0;
};

// Mean and worst of a series of frames, on each clock (the worst of each clock on its own).
struct FrameStats {
  int n = 0;
  FrameTimes sum, worst;
  int worst_frame = -1;  // index of the frame with the worst wall time
  void add(const FrameTimes& f) {
    if (f.wall > worst.wall) worst_frame = n;
    ++n;
    sum.wall += f.wall, sum.cpu += f.cpu, sum.thread += f.thread;
    if (f.wall > worst.wall) worst.wall = f.wall;
    if (f.cpu > worst.cpu) worst.cpu = f.cpu;
    if (f.thread > worst.thread) worst.thread = f.thread;
  }
  FrameTimes mean() const {
    const double k = n > 0 ? 1.0 / n : 0.0;
    return {sum.wall * k, sum.cpu * k, sum.thread * k};
  }
};

inline void print_load(const char* when) {
  double l[3] = {0, 0, 0};
  if (getloadavg(l, 3) == 3) std::printf("load average at %s: %.2f %.2f %.2f\n", when, l[0], l[1], l[2]);
}

}  // namespace onegpu::bench
