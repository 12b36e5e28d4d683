#pragma once
// Function multiversioning for hot loops: the loader picks an AVX-512 or AVX2 build of the
// function where the CPU has it, while the binary still runs on any x86-64 (no -march needed).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONEGPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ONEGPU_CLONES
#endif

// Forced inline for helpers called from ONEGPU_CLONES functions: they must be compiled inside
// each clone (AVX-512, AVX2), not once for plain x86-64 and called.
#define ONEGPU_INLINE inline __attribute__((always_inline))
#define ONEGPU_INLINE_LAMBDA __attribute__((always_inline))

namespace onegpu::trainer {
// 16 floats: one AVX-512 register, two AVX2 ones, four SSE ones.
typedef float v16 __attribute__((vector_size(64)));
}  // namespace onegpu::trainer
