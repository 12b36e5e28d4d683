#include "app/scene/token_label.h"

#include <cstdio>

namespace onegpu::app {

// A token as a label: newlines and tabs get a visible stand-in; bytes that are not a whole
// character (a token can hold half of "’") are written as their hex values, <E2 80>, which the
// chart explains under itself (see draw_chart).
std::string token_label(const std::string& tok) {
  std::string out, loose;
  auto flush = [&] {
    if (!loose.empty()) out += "<" + loose + ">";
    loose.clear();
  };
  for (std::size_t i = 0; i < tok.size();) {
    const unsigned char ch = static_cast<unsigned char>(tok[i]);
    const int len = ch < 0x80 ? 1 : (ch & 0xE0) == 0xC0 ? 2 : (ch & 0xF0) == 0xE0 ? 3 : (ch & 0xF8) == 0xF0 ? 4 : 0;
    bool whole = len > 0 && i + len <= tok.size();
    for (int k = 1; whole && k < len; ++k) whole = (static_cast<unsigned char>(tok[i + k]) & 0xC0) == 0x80;
    if (!whole || (len == 1 && ch < 0x20 && ch != '\n' && ch != '\t')) {
      char b[4];
      std::snprintf(b, sizeof b, "%s%02X", loose.empty() ? "" : " ", ch);
      loose += b;
      ++i;
      continue;
    }
    flush();
    if (ch == '\n') out += "↵";
    else if (ch == '\t') out += "⇥";
    else out.append(tok, i, len);
    i += len;
  }
  flush();
  return out;
}

}  // namespace onegpu::app
