#pragma once
// Whole numbers as the story writes them everywhere: 1,000 and 12,345 (never "1000" in one
// chapter and "1,000" in another).
#include <string>

namespace onegpu::app {

inline std::string with_commas(long long v) {
  std::string s = std::to_string(v < 0 ? -v : v), out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

}  // namespace onegpu::app
