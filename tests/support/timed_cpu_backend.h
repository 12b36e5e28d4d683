#pragma once
// A CPU backend that presents itself as a device (Backend::timed_on_device): every op runs at
// once on the CPU, but a split run then takes its device path (copies and sums through the
// ranks' backends, Backend::after between them, AdamW through Backend ops, op costs from
// mark_begin/mark_end). Used to test that path where no GPU is present; it counts what it
// was asked to do and reports a made-up cost per op (device_cost) so the clock can be checked.
#include <atomic>
#include <cstdint>
#include <memory>

#include "trainer/ops/cpu_backend.h"

namespace onegpu::test {

struct DeviceCalls {
  std::atomic<long> copies{0}, afters{0}, marks{0}, syncs{0};
};

class TimedCpuBackend final : public trainer::Backend {
 public:
  static double device_cost(std::uint32_t key) { return 1e-3 * (1 + key % 5); }

  TimedCpuBackend(trainer::MemoryTracker& t, DeviceCalls& calls) : cpu_(t, 1), calls_(calls) {}
  std::string_view name() const override { return "timed-cpu"; }
  int threads() const override { return 1; }
  void matmul(const float* A, const float* B, float* C, int M, int K, int N, bool tA, bool tB, bool acc) override {
    cpu_.matmul(A, B, C, M, K, N, tA, tB, acc);
  }
  void rmsnorm_forward(const float* x, const float* g, float* y, float* r, int T, int D, float eps) override {
    cpu_.rmsnorm_forward(x, g, y, r, T, D, eps);
  }
  void rmsnorm_backward(const float* x, const float* g, const float* r, const float* dy, float* dx, float* dg, int T,
                        int D) override {
    cpu_.rmsnorm_backward(x, g, r, dy, dx, dg, T, D);
  }
  void rope(float* qkv, int T, int S, int H, int dh, bool inv) override { cpu_.rope(qkv, T, S, H, dh, inv); }
  void attention_forward(const float* qkv, float* out, float* p, int B, int S, int H, int dh) override {
    cpu_.attention_forward(qkv, out, p, B, S, H, dh);
  }
  void attention_backward(const float* qkv, const float* p, const float* dout, float* dqkv, int B, int S, int H,
                          int dh) override {
    cpu_.attention_backward(qkv, p, dout, dqkv, B, S, H, dh);
  }
  void softmax_rows(const float* x, float* y, int T, int N) override { cpu_.softmax_rows(x, y, T, N); }
  void silu_forward(const float* u, float* a, std::int64_t n) override { cpu_.silu_forward(u, a, n); }
  void silu_backward(const float* u, const float* da, float* du, std::int64_t n) override {
    cpu_.silu_backward(u, da, du, n);
  }
  double cross_entropy(const float* l, const std::int32_t* t, float* dl, int T, int V, float s) override {
    return cpu_.cross_entropy(l, t, dl, T, V, s);
  }
  void embedding_forward(const float* table, const std::int32_t* tok, float* out, int T, int D) override {
    cpu_.embedding_forward(table, tok, out, T, D);
  }
  void embedding_backward(const std::int32_t* tok, const float* dout, float* dt, int T, int D) override {
    cpu_.embedding_backward(tok, dout, dt, T, D);
  }
  void gather_rows(const float* src, const std::int32_t* idx, float* dst, int n, int D) override {
    cpu_.gather_rows(src, idx, dst, n, D);
  }
  void scatter_add_rows(const float* src, const std::int32_t* idx, const float* w, float* dst, int n, int D) override {
    cpu_.scatter_add_rows(src, idx, w, dst, n, D);
  }
  void add(const float* a, float* y, std::int64_t n) override { cpu_.add(a, y, n); }
  void parallel_tasks(int n, const std::function<void(int)>& fn) override { cpu_.parallel_tasks(n, fn); }
  void bf16_to_f32(const std::uint16_t* s, float* d, std::int64_t n) override { cpu_.bf16_to_f32(s, d, n); }

  void sync() override { ++calls_.syncs; }
  void copy(const float* src, float* dst, std::int64_t n) override {
    ++calls_.copies;
    Backend::copy(src, dst, n);
  }
  void copy_bytes(const void* src, void* dst, std::size_t bytes) override {
    ++calls_.copies;
    Backend::copy_bytes(src, dst, bytes);
  }
  void after(Backend&) override { ++calls_.afters; }
  bool timed_on_device() const override { return true; }
  void mark_begin(std::uint32_t) override { ++calls_.marks; }
  void mark_end(std::uint32_t) override {}
  double marked_seconds(std::uint32_t key) override { return device_cost(key); }

 private:
  trainer::CpuBackend cpu_;
  DeviceCalls& calls_;
};

}  // namespace onegpu::test
