#pragma once
// Where a wrapped line may break: at a space, except between a number and its unit ("32.4 GB",
// "0.65 s", "12 %"), which a reader takes as one thing. The pictures' wrapping (Canvas::wrap)
// and the Lab's (app/lab/lab_flow.h line_end) both ask here.
#include <array>
#include <string_view>

namespace onegpu::render {

// The units the program writes after a number, as written (bytes, times, rates, shares).
inline bool is_unit(std::string_view w) {
  while (!w.empty() && (w.back() == ',' || w.back() == ';' || w.back() == ':' || w.back() == ')' || w.back() == '.'))
    w.remove_suffix(1);
  static constexpr std::array<std::string_view, 24> kUnits = {
      "B",   "KB",   "MB",   "GB",   "TB",  "KiB",  "MiB",     "GiB",     "TiB",     "s",       "ms",      "us",
      "µs",  "ns",   "%",    "fps",  "GB/s", "TB/s", "MB/s", "tokens/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", "FLOP/s"};
  for (std::string_view u : kUnits)
    if (w == u) return true;
  return false;
}

// True when the space between `word` and `next` must not break a line: `word` ends in a digit
// and `next` is a unit.
inline bool keeps_with_next(std::string_view word, std::string_view next) {
  return !word.empty() && word.back() >= '0' && word.back() <= '9' && is_unit(next);
}

}  // namespace onegpu::render
