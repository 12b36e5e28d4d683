#include "trainer/dist/comm.h"

#include <cstring>

namespace onegpu::trainer {

void all_gather_bytes(Comm& c, const void* mine, std::size_t bytes, void* out) {
  auto* o = static_cast<std::uint8_t*>(out);
  std::memcpy(o + (std::size_t)c.rank() * bytes, mine, bytes);
  if (c.world() <= 1) return;
  c.group([&] {
    for (int p = 0; p < c.world(); ++p)
      if (p != c.rank()) c.send(mine, bytes, p);
    for (int p = 0; p < c.world(); ++p)
      if (p != c.rank()) c.recv(o + (std::size_t)p * bytes, bytes, p);
  });
}

}  // namespace onegpu::trainer
