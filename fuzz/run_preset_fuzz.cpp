// The Lab's run-preset reader (cli::parse_run_preset, what `onegpu lab --preset FILE` uses) on
// arbitrary text: a preset whose flags make a valid split, or one trainer::Error, never a crash.
// Beyond the JSON parser it runs train's flag parser (CLI11) and the plan's split rules.
#include <cstdint>
#include <string_view>

#include "app/cli/run_preset.h"
#include "trainer/error.h"

using namespace onegpu;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)cli::parse_run_preset(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", "preset fuzz");
  } catch (const trainer::Error&) {
  }
  return 0;
}
