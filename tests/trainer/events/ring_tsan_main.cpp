// The ring stress test built with -fsanitize=thread (no GTest: its library is not instrumented).
// Smaller counts than the GTest version so it runs in seconds under TSan.
#include <cstdio>

#include "ring_stress.h"

int main() {
  using onegpu::trainer::stress::run;
  int failures = 0;
  const auto a = run(3, 60'000, 1u << 10, /*polite=*/true);
  if (a.errors || a.received != a.produced || a.dropped != 0) {
    std::fprintf(stderr, "polite: %s received %llu of %llu dropped %llu\n", a.first_error.c_str(),
                 (unsigned long long)a.received, (unsigned long long)a.produced,
                 (unsigned long long)a.dropped);
    ++failures;
  }
  const auto b = run(3, 60'000, 32, /*polite=*/false);
  if (b.errors || b.announced != b.dropped || b.received + b.dropped != b.produced) {
    std::fprintf(stderr, "overflow: %s received %llu dropped %llu announced %llu of %llu\n",
                 b.first_error.c_str(), (unsigned long long)b.received,
                 (unsigned long long)b.dropped, (unsigned long long)b.announced,
                 (unsigned long long)b.produced);
    ++failures;
  }
  std::printf("tsan ring stress: %s (overflow run dropped %llu)\n", failures ? "FAILED" : "ok",
              (unsigned long long)b.dropped);
  return failures ? 1 : 0;
}
