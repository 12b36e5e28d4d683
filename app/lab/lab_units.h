#pragma once
// How the Lab's panels write a size in bytes and a length of time: one way everywhere.
#include <cmath>
#include <cstdio>
#include <string>

namespace onegpu::app {

inline std::string fmt_bytes(double b) {
  char s[32];
  if (b >= 1e9) std::snprintf(s, sizeof s, "%.2f GB", b / 1e9);
  else if (b >= 1e6) std::snprintf(s, sizeof s, "%.2f MB", b / 1e6);
  else if (b >= 1e3) std::snprintf(s, sizeof s, "%.1f kB", b / 1e3);
  else std::snprintf(s, sizeof s, "%.0f B", b);
  return s;
}

// Seconds as s, ms or µs, whichever keeps the figure short.
inline std::string fmt_time(double s) {
  char b[32];
  const double a = std::fabs(s);
  if (a >= 1) std::snprintf(b, sizeof b, "%.2f s", s);
  else if (a >= 1e-3) std::snprintf(b, sizeof b, "%.2f ms", s * 1e3);
  else std::snprintf(b, sizeof b, "%.0f µs", s * 1e6);
  return b;
}

}  // namespace onegpu::app
