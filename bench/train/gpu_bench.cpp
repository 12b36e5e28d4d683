// Training throughput on one GPU: tokens/s, achieved matmul TFLOP/s and model FLOPs utilisation
// (MFU) against the GPU's dense bf16 tensor-core peak (cuda_backend.h: cuda_device_info), for
// `story` and `wide`, with the matmuls in fp32, in TF32 and with bf16 inputs (device.h: MatmulMath). Random tokens: the shapes, not the
// text, set the cost. Each figure is the best of 3 timed windows of `steps` steps, each window
// ending when the device is idle. scripts/device-check runs it.
// Usage: bench_train_gpu [steps] [story|wide] [fp32|tf32|bf16]   (one line per model and precision)
// With ONEGPU_CUDA_PROFILE=1 each run then times one more step op by op (trainer/device.h:
// device_op_profile) and prints a `profile` line for the step's wall time against the ops' total,
// then one line an op name, largest first. (Profiling slows the timed windows a little.)
// Exit 2 with one line where there is no CUDA device.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trainer/cuda/cuda_backend.h"
#include "trainer/device.h"
#include "trainer/error.h"
#include "bench/train/train_shapes.h"
#include "trainer/memory/tracker.h"
#include "trainer/model/model.h"
#include "trainer/optim/adamw.h"

using namespace onegpu::trainer;
using clk = std::chrono::steady_clock;

namespace {

struct Result {
  double tokens_per_s = 0, tflops = 0, step_ms = 0;
  MemStats mem;
  std::vector<OpTotal> profile;  // one step's, with ONEGPU_CUDA_PROFILE
  double profiled_step_ms = 0;
};

Result run(const std::string& name, int B, int steps, MatmulMath math) {
  ModelConfig c = model_preset(name);
  MemoryTracker mt;
  auto be = make_device_backend(mt, math);
  Model m(c, *be, mt, 1);
  AdamWConfig opt;
  opt.total_steps = 3 * steps + 2;
  const int S = c.seq_len;
  Batch b = onegpu::bench::random_batch(B, S, c.vocab);
  MicrobatchState st;
  auto step = [&](int i) {
    be->zero(m.params().grads.data(), m.params().count());
    m.forward_backward(st, b, {1.f / (B * S), 1.f});
    adamw_update(m.params(), opt, i, *be);
  };
  step(0);  // warm-up: first-touch of every buffer, cuBLAS heuristics
  be->sync();
  mt.reset_peaks();
  double best = 1e300;
  int i = 1;
  for (int w = 0; w < 3; ++w) {
    auto t0 = clk::now();
    for (int j = 0; j < steps; ++j) step(i++);
    be->sync();
    best = std::min(best, std::chrono::duration<double>(clk::now() - t0).count());
  }
  Result r;
  r.tokens_per_s = (double)steps * B * S / best;
  r.tflops = r.tokens_per_s * onegpu::bench::train_flops_per_token(c) / 1e12;
  r.step_ms = 1e3 * best / steps;
  r.mem = mt.stats();
  if (std::getenv("ONEGPU_CUDA_PROFILE")) {
    device_op_profile(*be);  // the windows' spans: dropped
    auto t0 = clk::now();
    step(i++);
    be->sync();
    r.profiled_step_ms = 1e3 * std::chrono::duration<double>(clk::now() - t0).count();
    r.profile = device_op_profile(*be);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::string only = argc > 2 ? argv[2] : "";
  const std::string only_math = argc > 3 ? argv[3] : "";
  if (steps <= 0) {
    std::fprintf(stderr, "bench_train_gpu: steps must be positive\n");
    return 2;
  }
  DeviceInfo d = probe_devices();
  if (d.cuda_devices == 0) {
    std::fprintf(stderr, "bench_train_gpu: no CUDA device: %s\n", d.note.c_str());
    return 2;
  }
  CudaDeviceInfo g = cuda_device_info(0);
  std::printf("gpu name=\"%s\" sms=%d cc=%d.%d memory_gib=%.0f bf16_dense_peak_tflops=%.1f\n", g.name.c_str(),
              g.sm_count, g.cc_major, g.cc_minor, g.memory_bytes / 1073741824.0, g.bf16_dense_tflops);
  struct Case {
    const char* model;
    int batch;
  };
  try {
    for (Case k : {Case{"story", 64}, Case{"wide", 8}})
      for (MatmulMath math : {MatmulMath::fp32, MatmulMath::tf32, MatmulMath::bf16}) {
        if (!only.empty() && only != k.model) continue;
        if (!only_math.empty() && only_math != matmul_math_name(math)) continue;
        Result r = run(k.model, k.batch, steps, math);
        const double mfu = g.bf16_dense_tflops > 0 ? r.tflops / g.bf16_dense_tflops : 0.0;
        std::printf("onegpu_gpu model=%s batch=%d math=%s tokens_per_s=%.0f step_ms=%.1f tflops=%.2f mfu_bf16=%.4f "
                    "peak_gib weights=%.2f gradients=%.2f optimizer=%.2f activations=%.2f\n",
                    k.model, k.batch, matmul_math_name(math), r.tokens_per_s, r.step_ms, r.tflops, mfu,
                    r.mem.peak[0] / 1073741824.0, r.mem.peak[1] / 1073741824.0, r.mem.peak[2] / 1073741824.0,
                    r.mem.peak[3] / 1073741824.0);
        double ops_ms = 0;
        for (const OpTotal& o : r.profile) ops_ms += o.ms;
        if (!r.profile.empty())
          std::printf("profile model=%s math=%s step_ms=%.2f ops_ms=%.2f (an op's span includes any wait for the host before it)\n",
                      k.model, matmul_math_name(math), r.profiled_step_ms, ops_ms);
        for (const OpTotal& o : r.profile)
          std::printf("profile model=%s math=%s op=\"%s\" count=%d ms=%.3f share=%.3f\n", k.model, matmul_math_name(math),
                      o.name.c_str(), o.count, o.ms, ops_ms > 0 ? o.ms / ops_ms : 0.0);
        std::fflush(stdout);
      }
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_train_gpu: %s\n", e.what());
    return 1;
  }
  return 0;
}
