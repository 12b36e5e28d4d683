// The trace reader (trainer::parse_chrome_trace, what the Lab uses to open a trace) on
// arbitrary text: a list of ops or one trainer::Error, never a crash.
#include <cstdint>
#include <string_view>

#include "trainer/io/chrome_trace.h"
#include "trainer/error.h"

using namespace onegpu::trainer;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)parse_chrome_trace(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const Error&) {
  }
  return 0;
}
