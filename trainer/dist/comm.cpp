#include "trainer/dist/comm.h"

#include <cstring>

#include "trainer/error.h"

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

std::vector<std::vector<std::uint8_t>> gather_to_root(Comm& c, std::span<const std::uint8_t> mine, int root) {
  std::vector<std::vector<std::uint8_t>> all;
  // The sizes first (a receive must know its size), then the bytes.
  std::vector<std::uint64_t> sizes((std::size_t)c.world());
  const std::uint64_t n = mine.size();
  all_gather_bytes(c, &n, sizeof n, sizes.data());
  if (c.rank() != root) {
    if (n) c.send(mine.data(), n, root);
    c.flush();
    return all;
  }
  all.resize((std::size_t)c.world());
  c.group([&] {
    for (int p = 0; p < c.world(); ++p) {
      all[(std::size_t)p].resize(sizes[(std::size_t)p]);
      if (p == root) {
        if (n) std::memcpy(all[(std::size_t)p].data(), mine.data(), n);
      }
      else if (sizes[(std::size_t)p])
        c.recv(all[(std::size_t)p].data(), sizes[(std::size_t)p], p);
    }
  });
  return all;
}

std::vector<std::uint8_t> broadcast_from_root(Comm& c, std::vector<std::uint8_t> bytes, int root) {
  if (c.world() <= 1) return bytes;
  std::uint64_t n = bytes.size();
  std::vector<std::uint64_t> sizes((std::size_t)c.world());
  all_gather_bytes(c, &n, sizeof n, sizes.data());
  n = sizes[(std::size_t)root];
  if (c.rank() == root) {
    c.group([&] {
      for (int p = 0; p < c.world(); ++p)
        if (p != root && n) c.send(bytes.data(), n, p);
    });
  } else {
    bytes.assign(n, 0);
    if (n) c.recv(bytes.data(), n, root);
  }
  return bytes;
}

void agree(Comm& c, const std::string& error, int root) {
  const auto all = gather_to_root(c, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(error.data()), error.size()), root);
  std::string first;
  if (c.rank() == root) {
    if (!all[(std::size_t)root].empty())
      first = error;
    else
      for (int p = 0; p < c.world() && first.empty(); ++p)
        if (!all[(std::size_t)p].empty()) first = "rank " + std::to_string(p) + ": " + std::string(all[(std::size_t)p].begin(), all[(std::size_t)p].end());
  }
  const std::vector<std::uint8_t> said = broadcast_from_root(c, std::vector<std::uint8_t>(first.begin(), first.end()), root);
  if (!said.empty()) throw Error(std::string(said.begin(), said.end()));
}

}  // namespace onegpu::trainer
