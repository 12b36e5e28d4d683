// The Lab's trace loader (app::parse_trace_run, what `onegpu lab --open` and `onegpu view` use)
// on arbitrary text: a recorded run whose ops match the plans of its configuration, or one
// trainer::Error, never a crash. Beyond the reader (chrome_trace_fuzz.cpp) it checks the
// configuration, compiles its plans and matches every op to them.
#include <cstdint>
#include <string_view>

#include "app/live/trace_run.h"
#include "trainer/error.h"

using namespace onegpu;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)app::parse_trace_run(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const trainer::Error&) {
  }
  return 0;
}
