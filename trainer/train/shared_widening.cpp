#include "trainer/train/shared_widening.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "trainer/error.h"
#include "trainer/ops/cpu_pause.h"

namespace onegpu::trainer {

namespace {
thread_local int t_worker = -1;
constexpr int kSpin = 1000;        // pause iterations before sleeping: the shares end close together
constexpr int kAborted = 1 << 28;  // added to every counter on abort, past any target
constexpr std::int64_t kAlign = 64;  // floats: shares start on cache lines
}  // namespace

void SharedWidening::Free::operator()(float* p) const { std::free(p); }

SharedWidening::SharedWidening(std::int64_t largest, std::vector<Backend*> backends)
    : largest_(largest), backends_(std::move(backends)), requests_(backends_.size(), 0) {
  const std::size_t bytes = ((std::size_t)largest_ * sizeof(float) + 63) / 64 * 64;
  for (auto& s : slots_) {
    s.reset(static_cast<float*>(std::aligned_alloc(64, bytes ? bytes : 64)));
    if (!s) throw std::bad_alloc();
  }
  reset();
}

void SharedWidening::reset() {
  for (auto& d : done_) d.store(0, std::memory_order_relaxed);
  std::fill(requests_.begin(), requests_.end(), 0);
  aborted_.store(false, std::memory_order_relaxed);
}

void SharedWidening::set_worker(int w) { t_worker = w; }

const float* SharedWidening::wide(const bf16* src, std::int64_t, std::int64_t n) {
  const int w = t_worker, W = (int)backends_.size();
  if (w < 0 || w >= W || n > largest_) return nullptr;
  const int k = requests_[(std::size_t)w]++;
  const int slot = k % kSlots, target = (k / kSlots + 1) * W;
  float* dst = slots_[slot].get();
  const std::int64_t i0 = std::min(n, (n * w / W + kAlign - 1) / kAlign * kAlign);
  const std::int64_t i1 = w + 1 == W ? n : std::min(n, (n * (w + 1) / W + kAlign - 1) / kAlign * kAlign);
  if (i1 > i0) backends_[(std::size_t)w]->bf16_to_f32(src + i0, dst + i0, i1 - i0);
  std::atomic<int>& d = done_[slot];
  d.fetch_add(1, std::memory_order_acq_rel);
  d.notify_all();
  int v = d.load(std::memory_order_acquire);
  for (int s = 0; v < target && s < kSpin; ++s) {
    cpu_pause();
    v = d.load(std::memory_order_acquire);
  }
  while (v < target) {
    d.wait(v, std::memory_order_acquire);
    v = d.load(std::memory_order_acquire);
  }
  if (aborted_.load(std::memory_order_acquire)) throw Error("split step: another worker failed");
  return dst;
}

void SharedWidening::abort() {
  aborted_.store(true, std::memory_order_release);
  for (auto& d : done_) {
    d.fetch_add(kAborted, std::memory_order_acq_rel);
    d.notify_all();
  }
}

}  // namespace onegpu::trainer
