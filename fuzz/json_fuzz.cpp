// The JSON parser on arbitrary text: a Value or trainer::Error, never a crash or a stack
// overflow (nesting is capped). What it accepts, dump() writes back as JSON it accepts again,
// to the same text.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trainer/error.h"
#include "trainer/io/json.h"

using namespace onegpu::trainer;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  json::Value v;
  try {
    v = json::parse(text);
  } catch (const Error&) {
    return 0;
  }
  const std::string once = v.dump();
  const std::string twice = json::parse(once).dump();  // must not throw
  if (once != twice) std::abort();
  return 0;
}
