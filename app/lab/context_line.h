#pragma once
// The line over the head's guesses in the by-hand read-out: the last tokens of the first text,
// then "→ ?". The tokens are pieces of words, so the first may be the tail of a word whose start
// fell outside ("hase" of "chase"): the line starts at a word instead, after an ellipsis, and
// where the column is narrow it drops whole words from the front, never half a character.
#include <string>

namespace onegpu::app {

// Drops s's first character: one whole UTF-8 sequence, never half of one.
inline void drop_first_char(std::string& s) {
  std::size_t n = 1;
  while (n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) ++n;
  s.erase(0, n);
}

// `from_text_start`: the context begins the text (nothing was cut before it).
// width(s): the drawn width of s.
template <class Width>
std::string context_line(std::string s, bool from_text_start, float room, Width width) {
  const std::string arrow = " \u2192 ?", cut = "\u2026 ";
  if (!from_text_start && !s.empty() && s[0] != ' ') {
    const std::size_t space = s.find(' ');
    if (space != std::string::npos) s.erase(0, space);  // a word's tail
  }
  bool dropped = !from_text_start;
  while (!s.empty() && s[0] == ' ') s.erase(0, 1);
  auto line = [&] { return (dropped ? cut : std::string()) + s + arrow; };
  // Whole words from the front while one is left after them.
  while (width(line()) > room) {
    const std::size_t space = s.find(' ');
    if (space == std::string::npos) break;
    s.erase(0, space + 1);
    dropped = true;
  }
  // One word still too wide: its characters from the front, whole UTF-8 sequences at a time.
  while (width(line()) > room && !s.empty()) {
    drop_first_char(s);
    dropped = true;
  }
  return line();
}

}  // namespace onegpu::app
