// The safetensors reader on arbitrary bytes: it must return a File or throw trainer::Error,
// never crash, read out of bounds or allocate without bound. A File it returns must survive a
// serialize/parse round trip unchanged.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trainer/error.h"
#include "trainer/io/safetensors.h"

using namespace onegpu::trainer;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  safetensors::File f;
  try {
    f = safetensors::parse(bytes, "fuzz");
  } catch (const Error&) {
    return 0;
  }
  const std::string again = safetensors::serialize(f);
  const safetensors::File g = safetensors::parse(again, "round trip");  // must not throw
  if (g.names() != f.names() || g.metadata != f.metadata) std::abort();
  for (const auto& [name, t] : f.tensors())
    if (g.get(name).bytes != t.bytes || g.get(name).shape != t.shape || g.get(name).dtype != t.dtype) std::abort();
  return 0;
}
