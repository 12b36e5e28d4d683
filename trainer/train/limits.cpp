#include "trainer/train/limits.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "trainer/error.h"
#include "trainer/io/text.h"

namespace onegpu::trainer::limits {

namespace {
// Saturating arithmetic: a product of huge sizes must not wrap to something that fits.
std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return std::numeric_limits<std::uint64_t>::max();
  return a * b;
}
std::uint64_t add(std::uint64_t a, std::uint64_t b) {
  return b > std::numeric_limits<std::uint64_t>::max() - a ? std::numeric_limits<std::uint64_t>::max() : a + b;
}
std::uint64_t u(int v) { return v > 0 ? static_cast<std::uint64_t>(v) : 0; }
}  // namespace

std::uint64_t weight_bytes(const ModelConfig& c) {
  const std::uint64_t D = u(c.d_model), L = u(c.n_layers), E = u(c.n_experts), H = u(c.expert_hidden), V = u(c.vocab);
  std::uint64_t n = mul(2, mul(V, D));                       // embeddings + head
  n = add(n, mul(L, mul(4, mul(D, D))));                      // attention
  n = add(n, mul(add(mul(2, L), 1), D));                      // norms
  n = add(n, mul(L, mul(D, E)));                              // routers
  n = add(n, mul(L, mul(E, mul(2, mul(D, H)))));              // experts
  return mul(n, 18);
}

std::uint64_t activation_bytes(const ModelConfig& c, std::uint64_t rows, std::uint64_t seq) {
  const std::uint64_t D = u(c.d_model), L = u(c.n_layers), E = u(c.n_experts), H = u(c.expert_hidden),
                      V = u(c.vocab), K = u(c.top_k), NH = u(c.n_heads);
  // Floats per token and layer: ~16 D-wide vectors (norms, q/k/v, attention out, residuals
  // and their gradients), attention probabilities (heads x seq), router logits and
  // probabilities, and for each chosen expert its input, hidden pair and output.
  std::uint64_t per_layer = add(add(mul(16, D), mul(2, mul(NH, seq))), add(mul(4, E), mul(K, add(mul(3, D), mul(4, H)))));
  per_layer = add(per_layer, mul(8, K));  // routing indices
  std::uint64_t per_token = add(mul(L, per_layer), add(mul(3, V), mul(4, D)));
  return mul(mul(per_token, 4), mul(rows, seq));
}

std::uint64_t memory_budget() {
  if (const char* e = std::getenv("ONEGPU_MEMORY_LIMIT")) {
    if (auto v = text::parse_u64(e)) return *v;
  }
  std::uint64_t b = std::numeric_limits<std::uint64_t>::max();
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) b = mul(static_cast<std::uint64_t>(pages), static_cast<std::uint64_t>(page));
  // cgroup v2, then v1: "max" or a number of bytes.
  for (const char* f : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(f);
    std::string s;
    if (in >> s) {
      if (auto v = text::parse_u64(s); v && *v > 0 && *v < b) b = *v;
    }
  }
  return b;
}

std::string bytes_text(std::uint64_t b) {
  char buf[64];
  if (b >= (1ull << 60)) std::snprintf(buf, sizeof buf, "more than an exabyte");
  else if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.1f GB", b / double(1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.0f MB", b / double(1ull << 20));
  else std::snprintf(buf, sizeof buf, "%.0f KB", b / 1024.0);
  return buf;
}

void require_memory(std::uint64_t need, const std::string& what, const std::string& hint) {
  const std::uint64_t have = memory_budget();
  if (need <= have) return;
  throw Error(what + " needs about " + bytes_text(need) + " of memory, more than the " + bytes_text(have) +
              " this machine has; " + hint);
}

void require_steps_reach(long long steps, long long at) {
  if (steps < at)
    throw Error("--steps " + std::to_string(steps) + " is below the checkpoint's step " + std::to_string(at));
}

}  // namespace onegpu::trainer::limits
