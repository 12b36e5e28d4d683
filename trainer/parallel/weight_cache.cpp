#include "trainer/parallel/weight_cache.h"

#include <algorithm>
#include <new>

namespace onegpu::trainer {

WeightCache::Array WeightCache::floats(std::int64_t n) {
  // 64-byte aligned, as the tracker's blocks that the copies stand for.
  const std::size_t bytes = (std::size_t)n * sizeof(float);
  return Array(static_cast<float*>(take_host_block(bytes)), Free{bytes});
}

const float* WeightCache::wide(const bf16* src, std::int64_t offset, std::int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  Copy* c = nullptr;
  for (Copy& w : wide_)
    if (w.offset == offset && w.n == n) c = &w;
  if (!c) {
    wide_.push_back(Copy{offset, n, floats(n), 0});
    c = &wide_.back();
  }
  if (c->made != generation_) {
    float* d = c->data.get();
    for (std::int64_t i = 0; i < n; ++i) d[i] = bf16_to_float(src[i]);
    c->made = generation_;
  }
  return c->data.get();
}

const float* WeightCache::transposed(const float* b, int N, int K) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::lower_bound(transposed_.begin(), transposed_.end(), b,
                             [](const Transposed& t, const float* p) { return t.of < p; });
  if (it != transposed_.end() && it->of == b && it->copy.made == generation_ && it->copy.offset == N && it->copy.n == K)
    return it->copy.data.get();
  const std::int64_t n = (std::int64_t)N * K;
  bool inside = false;  // b must lie in a copy of this step
  for (const Copy& w : wide_)
    if (w.made == generation_ && b >= w.data.get() && b + n <= w.data.get() + w.n) inside = true;
  if (!inside) return nullptr;
  if (it == transposed_.end() || it->of != b) it = transposed_.insert(it, Transposed{b, Copy{}});
  Copy& t = it->copy;
  if (!t.data || t.offset * t.n != n) t.data = floats(n);
  t.offset = N;
  t.n = K;
  transpose_matrix(b, t.data.get(), N, K);
  t.made = generation_;
  return t.data.get();
}

void WeightCache::invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  ++generation_;
}

std::size_t WeightCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t s = 0;
  for (const Copy& c : wide_) s += (std::size_t)c.n * sizeof(float);
  for (const Transposed& t : transposed_) s += (std::size_t)(t.copy.offset * t.copy.n) * sizeof(float);
  return s;
}

}  // namespace onegpu::trainer
