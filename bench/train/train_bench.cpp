// Tokens/s of the story and scale models on 1 and 2 threads, with achieved GFLOP/s against
// the machine's FMA peak measured here by a microbenchmark. Random tokens: the shapes, not the
// text, set the cost. Each figure is the best of 5 timed windows of `steps` steps (PyTorch's too).
// Usage: bench_train [steps] [story|scale] [threads] [nopeak|peak] [ops|shards|timing|shards,timing] [microbatches]
// Each step is the one `onegpu train` runs on the CPU: zeroed gradients, forward and backward
// through SplitStep (each microbatch cut into two shards of its texts, run on the threads at
// once; or, with two or more microbatches of 4 texts a step, two whole microbatches at once),
// then AdamW on the same threads.
// ops: the older way instead, for comparison: every op split over the threads.
// shards: the two shards (or the pair) even on one thread (what cutting a microbatch, or adding
//   the weight pieces apart, costs without threads).
// timing: a second line per run, split_ms_per_step: wall ms of the shards' forward, backward
//   input and weight pieces, and each shard's own CPU ms in the first two (SplitStep::Timing).
//        bench_train peak          the FMA peak lines only
//        bench_train flops MODEL   matmul FLOPs of one training step per token
// nopeak skips the FMA microbenchmark (run.sh measures it once; callgrind counts instructions).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/train/train_shapes.h"
#include "trainer/memory/tracker.h"
#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/ops/thread_pool.h"
#include "trainer/optim/adamw.h"
#include "trainer/train/split_step.h"

using namespace onegpu::trainer;
using clk = std::chrono::steady_clock;

namespace {

typedef float v16 __attribute__((vector_size(64)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
float fma_loop(long iters, float seed) {
  // 12 independent accumulators hide the FMA latency.
  v16 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = v16{} + seed * (float)(i + 1);
  const v16 a = v16{} + 0.999999f, b = v16{} + 1e-7f;
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = acc[i] * a + b;
  float s = 0;
  for (int i = 0; i < 12; ++i) s += acc[i][0] + acc[i][15];
  return s;
}

double fma_peak_gflops(int threads) {
  const long iters = 20'000'000;
  std::vector<std::thread> ts;
  std::vector<float> sink(threads);
  auto t0 = clk::now();
  for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { sink[t] = fma_loop(iters, 1.f + t); });
  for (auto& t : ts) t.join();
  double s = std::chrono::duration<double>(clk::now() - t0).count();
  if (sink[0] == 12345.f) std::printf(" ");
  return 2.0 * 16 * 12 * iters * threads / s / 1e9;
}

constexpr int kWindows = 5;
struct Result {
  double tokens_per_s, gflops, cpu_ms_per_step;
  SplitStep::Timing timing;  // over every timed step
};

// The process's CPU time, or this thread's (one-thread runs: a twin's own, not its twin's).
double cpu_seconds(bool thread_only) {
  rusage u{};
  getrusage(thread_only ? RUSAGE_THREAD : RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

Result run(const std::string& name, int threads, int steps, bool split_ops, bool shards_alone, bool timed,
           int micro) {
  ModelConfig c = model_preset(name);
  MemoryTracker mt;
  CpuBackend be(mt, threads);
  Model m(c, be, mt, 1);
  const int B = 4, S = c.seq_len;
  SplitStep split(m, mt, be.pool(), B);
  split.set_shards_on_one_thread(shards_alone);
  SplitStep::Timing timing;
  AdamWConfig opt;
  opt.total_steps = kWindows * steps + 2;
  Batch b = onegpu::bench::random_batch(B * micro, S, c.vocab);
  MicrobatchState st;
  const LossScales sc{1.f / (B * S), 1.f};
  auto step = [&](int i) {
    zero_grads(m.params(), be.pool());
    if (split_ops)
      m.forward_backward(st, b, sc);
    else
      split.forward_backward(b, micro, sc);
    adamw_update(m.params(), opt, i, be.pool());
  };
  step(0);  // warm-up
  if (timed) split.set_timing(&timing);
  // Best of kWindows timed windows: a shared machine's hiccups only ever slow a window down.
  // torch_moe.py times PyTorch the same way. CPU time is over all windows (every thread).
  double best = 1e300;
  const double cpu0 = cpu_seconds(threads == 1);
  for (int w = 0, i = 1; w < kWindows; ++w) {
    auto t0 = clk::now();
    for (int j = 0; j < steps; ++j) step(i++);
    best = std::min(best, std::chrono::duration<double>(clk::now() - t0).count());
  }
  const double cpu_ms = (cpu_seconds(threads == 1) - cpu0) * 1e3 / (kWindows * steps);
  double tps = (double)steps * micro * B * S / best;
  return {tps, tps * onegpu::bench::train_flops_per_token(c) / 1e9, cpu_ms, timing};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "peak") {
    std::printf("fma_peak threads=1 gflops=%.1f\nfma_peak threads=2 gflops=%.1f\n", fma_peak_gflops(1),
                fma_peak_gflops(2));
    return 0;
  }
  if (argc > 2 && std::string(argv[1]) == "flops") {
    std::printf("%.0f\n", onegpu::bench::train_flops_per_token(model_preset(argv[2])));
    return 0;
  }
  int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  if (steps <= 0) {
    std::fprintf(stderr, "bench_train: steps must be positive\n");
    return 2;
  }
  const bool nopeak = argc > 4 && std::string(argv[4]) != "peak";
  double peak1 = nopeak ? 0 : fma_peak_gflops(1), peak2 = nopeak ? 0 : fma_peak_gflops(2);
  if (!nopeak) std::printf("fma_peak threads=1 gflops=%.1f\nfma_peak threads=2 gflops=%.1f\n", peak1, peak2);
  std::string only = argc > 2 ? argv[2] : "";
  const std::string how = argc > 5 ? argv[5] : "";
  const bool split_ops = how == "ops";
  const bool shards_alone = how == "shards" || how == "shards,timing";
  const bool timed = how == "timing" || how == "shards,timing";
  const int micro = argc > 6 ? std::atoi(argv[6]) : 1;
  if (micro < 1 || micro > 64) {
    std::fprintf(stderr, "bench_train: microbatches must be 1 to 64\n");
    return 2;
  }
  // "twin": two one-thread trainers, each with its own model, at once in this process (threads
  // 2 only). They share nothing but the process (its host pool, its address space), so against
  // two processes (split_cost.sh's procs) it says what being in one process costs, and against
  // two threads on one trainer what that trainer's own sharing costs. Prints each trainer's line.
  if (how == "twin") {
    if (only.empty() || (argc > 3 && std::atoi(argv[3]) != 2)) {
      std::fprintf(stderr, "bench_train: twin needs a model and threads 2\n");
      return 2;
    }
    Result r[2];
    const int n = only == "scale" ? std::max(3, steps / 4) : steps;
    std::thread other([&] { r[1] = run(only, 1, n, false, false, false, micro); });
    r[0] = run(only, 1, n, false, false, false, micro);
    other.join();
    for (const Result& x : r)
      std::printf("onegpu model=%s threads=1 twin microbatches=%d tokens_per_s=%.0f gflops=%.2f cpu_ms_per_step=%.2f\n",
                  only.c_str(), micro, x.tokens_per_s, x.gflops, x.cpu_ms_per_step);
    return 0;
  }
  for (const char* name : {"story", "scale"})
    for (int threads : {1, 2}) {
      if (!only.empty() && only != name) continue;
      if (argc > 3 && threads != std::atoi(argv[3])) continue;
      Result r = run(name, threads, name == std::string("scale") ? std::max(3, steps / 4) : steps, split_ops, shards_alone, timed, micro);
      double peak = threads == 1 ? peak1 : peak2;
      std::printf("onegpu model=%s threads=%d microbatches=%d tokens_per_s=%.0f gflops=%.2f cpu_ms_per_step=%.2f", name, threads, micro,
                  r.tokens_per_s, r.gflops, r.cpu_ms_per_step);
      if (!nopeak) std::printf(" peak_fraction=%.3f", r.gflops / peak);
      std::printf("\n");
      if (const SplitStep::Timing& t = r.timing; t.microbatches > 0) {
        const double k = 1e3 / t.microbatches;  // one microbatch a step
        std::printf("split_ms_per_step model=%s threads=%d forward=%.3f backward=%.3f pieces=%.3f", name, threads,
                    t.forward_s * k, t.backward_s * k, t.pieces_s * k);
        for (int s = 0; s < SplitStep::kShards; ++s)
          std::printf(" shard%d_forward_cpu=%.3f shard%d_backward_cpu=%.3f", s, t.shard_forward_cpu_s[s] * k, s,
                      t.shard_backward_cpu_s[s] * k);
        std::printf("\n");
      }
    }
  return 0;
}
