#include "trainer/train/step_weights.h"

#include <algorithm>

#include "trainer/ops/bf16.h"

namespace onegpu::trainer {

void StepWeights::refresh(const ParamStore& store, ThreadPool* pool) {
  constexpr std::int64_t kChunk = 1 << 15;
  const std::int64_t n = store.count(), chunks = (n + kChunk - 1) / kChunk;
  wide_.resize((std::size_t)n);
  const bf16* src = store.weights.data();
  float* dst = wide_.data();
  auto widen = [&](int c) {
    const std::int64_t a = c * kChunk, b = std::min(n, a + kChunk);
    for (std::int64_t i = a; i < b; ++i) dst[i] = bf16_to_float(src[i]);
  };
  if (pool)
    pool->parallel_for((int)chunks, widen);
  else
    for (int c = 0; c < (int)chunks; ++c) widen(c);
  ++generation_;
}

const float* StepWeights::wide(const bf16*, std::int64_t offset, std::int64_t n) {
  return offset >= 0 && n >= 0 && offset + n <= (std::int64_t)wide_.size() ? wide_.data() + offset : nullptr;
}

const float* StepWeights::transposed(const float* b, int N, int K) {
  const std::int64_t n = (std::int64_t)N * K;
  const auto at = reinterpret_cast<std::uintptr_t>(b), lo = reinterpret_cast<std::uintptr_t>(wide_.data());
  if (at < lo || at + (std::uintptr_t)n * sizeof(float) > lo + wide_.size() * sizeof(float)) return nullptr;
  Transpose* t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = transposed_[b];
    if (!slot) {
      slot = std::make_unique<Transpose>();
      slot->N = N;
      slot->K = K;
    }
    t = slot.get();
  }
  if (t->N != N || t->K != K) return nullptr;  // the same operand read in another shape
  std::lock_guard<std::mutex> lock(t->mu);
  if (t->made != generation_) {
    t->data.resize((std::size_t)n);
    transpose_matrix(b, t->data.data(), N, K);
    t->made = generation_;
  }
  return t->data.data();
}

}  // namespace onegpu::trainer
