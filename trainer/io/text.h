#pragma once
// Strict text → number parsing and printable text, for everything read from a user or a file
// (command-line flags, checkpoint metadata). One rule everywhere:
//   integer: an optional '-', then decimal digits, nothing else (no spaces, no '+', no "0x",
//            no trailing characters), and inside [lo, hi] (checked before any narrowing, so
//            4294967297 never wraps to 1);
//   number:  what strtod reads, the whole string, finite (1e308 is fine, 1e999 and nan are not).
// parse_* return nothing for bad text; the *_flag forms throw Error with one line naming the
// flag. printable() escapes control bytes and quotes so a string from a file cannot reach the
// terminal as an escape sequence.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace onegpu::trainer::text {

std::optional<long long> parse_int(std::string_view s, long long lo, long long hi);
std::optional<std::uint64_t> parse_u64(std::string_view s);
std::optional<double> parse_number(std::string_view s);

// "--steps expects an integer, got 'x'" / "--steps must be between 1 and 1000000000, got 0".
long long int_flag(std::string_view flag, std::string_view v, long long lo, long long hi);
std::uint64_t u64_flag(std::string_view flag, std::string_view v);

// Bytes 0x00-0x1f, 0x7f, '"' and '\\' escaped as in C (\n, \x1b, ...); other bytes unchanged.
std::string printable(std::string_view s);

// Levenshtein distance (for "did you mean ...?").
int edit_distance(std::string_view a, std::string_view b);

}  // namespace onegpu::trainer::text
