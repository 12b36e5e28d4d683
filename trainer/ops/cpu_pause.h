#pragma once
// One pause in a spin-wait: tells the core this thread is waiting (x86 PAUSE), so a spinning
// worker costs its sibling less; elsewhere the thread yields. Used by the thread pool and by
// the workers that share a microbatch, both of which spin briefly before they sleep.
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace onegpu::trainer {

inline void cpu_pause() {
#if defined(__x86_64__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace onegpu::trainer
