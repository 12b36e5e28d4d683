#include "trainer/io/text.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "trainer/error.h"

namespace onegpu::trainer::text {

namespace {
// Digits only; value accumulated in unsigned 64-bit with an overflow check.
std::optional<std::uint64_t> digits(std::string_view s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}
}  // namespace

std::optional<long long> parse_int(std::string_view s, long long lo, long long hi) {
  const bool neg = !s.empty() && s[0] == '-';
  auto u = digits(neg ? s.substr(1) : s);
  if (!u) return std::nullopt;
  constexpr std::uint64_t kMax = static_cast<std::uint64_t>(std::numeric_limits<long long>::max());
  if (neg ? *u > kMax + 1 : *u > kMax) return std::nullopt;
  const long long v = neg ? (*u == kMax + 1 ? std::numeric_limits<long long>::min() : -static_cast<long long>(*u))
                          : static_cast<long long>(*u);
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) { return digits(s); }

std::optional<double> parse_number(std::string_view s) {
  if (s.empty() || s.size() > 64) return std::nullopt;
  const char c0 = s[0];
  if (!(c0 == '-' || c0 == '.' || (c0 >= '0' && c0 <= '9'))) return std::nullopt;  // no spaces, '+', "inf"
  if (s.find_first_of("xXpPnNiI") != std::string_view::npos) return std::nullopt;      // no hex, nan, inf
  const std::string z(s);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(z.c_str(), &end);
  if (end != z.c_str() + z.size() || !std::isfinite(v) || errno == ERANGE) {
    // ERANGE for an underflow to a tiny number is harmless; only overflow is refused.
    if (end == z.c_str() + z.size() && std::isfinite(v) && errno == ERANGE) return v;
    return std::nullopt;
  }
  return v;
}

long long int_flag(std::string_view flag, std::string_view v, long long lo, long long hi) {
  const std::string f(flag);
  if (v.empty()) throw Error(f + " needs a value, got an empty one");
  if (auto x = parse_int(v, lo, hi)) return *x;
  const std::string_view body = v[0] == '-' ? v.substr(1) : v;
  const bool looks_integer = !body.empty() && body.find_first_not_of("0123456789") == std::string_view::npos;
  if (!looks_integer) throw Error(f + " expects a whole number (digits only), got '" + printable(v) + "'");
  throw Error(f + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + printable(v));
}

std::uint64_t u64_flag(std::string_view flag, std::string_view v) {
  const std::string f(flag);
  if (v.empty()) throw Error(f + " needs a value, got an empty one");
  if (auto x = parse_u64(v)) return *x;
  if (v.find_first_not_of("0123456789") == std::string_view::npos)
    throw Error(f + " must be at most " + std::to_string(std::numeric_limits<std::uint64_t>::max()) + ", got " +
                printable(v));
  throw Error(f + " expects a whole number (digits only), got '" + printable(v) + "'");
}

std::string printable(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      case '\r': o += "\\r"; break;
      case '\\': o += "\\\\"; break;
      case '"': o += "\\\""; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          static const char* hex = "0123456789abcdef";
          o += "\\x";
          o += hex[c >> 4];
          o += hex[c & 15];
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o;
}

int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    int diag = row[0];
    row[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const int up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace onegpu::trainer::text
