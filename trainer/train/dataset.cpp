#include "trainer/train/dataset.h"

#include <algorithm>

#include "trainer/error.h"

namespace onegpu::trainer {

TokenDataset TokenDataset::build(const BpeTokenizer& tok, std::span<const std::string> docs) {
  TokenDataset d;
  for (const auto& doc : docs) {
    d.doc_starts.push_back((std::int64_t)d.tokens.size());
    auto ids = tok.encode(doc);
    d.tokens.insert(d.tokens.end(), ids.begin(), ids.end());
    d.tokens.push_back(tok.eot_id());
  }
  return d;
}

namespace {
void append_window(const TokenDataset& d, std::int64_t start, int S, Batch& b) {
  for (int i = 0; i < S; ++i) {
    b.inputs.push_back(d.tokens[start + i]);
    b.targets.push_back(d.tokens[start + i + 1]);
  }
}
std::int64_t clamp_start(const TokenDataset& d, std::int64_t s, int S) {
  return std::min<std::int64_t>(s, (std::int64_t)d.tokens.size() - S - 1);
}
}  // namespace

Batch sample_batch(const TokenDataset& d, int B, int S, Rng& rng) {
  if (B <= 0 || S <= 0) throw Error("batch: sizes must be positive");
  if ((std::int64_t)d.tokens.size() < S + 1)
    throw Error("corpus too small: " + std::to_string(d.tokens.size()) + " tokens, need at least " +
                std::to_string(S + 1));
  Batch b;
  b.B = B;
  b.S = S;
  const std::int64_t span = (std::int64_t)d.tokens.size() - S - 1;
  for (int r = 0; r < B; ++r) {
    std::uint64_t u = rng.next();
    std::int64_t start;
    if ((u & 1) && !d.doc_starts.empty())
      start = d.doc_starts[(u >> 1) % d.doc_starts.size()];
    else
      start = (std::int64_t)((u >> 1) % (std::uint64_t)(span + 1));
    append_window(d, clamp_start(d, start, S), S, b);
  }
  return b;
}

std::vector<Batch> eval_batches(const TokenDataset& d, int rows, int B, int S) {
  if (rows <= 0 || B <= 0 || S <= 0) throw Error("eval: sizes must be positive");
  if ((std::int64_t)d.tokens.size() < S + 1) throw Error("held-out text too small for one window");
  std::vector<Batch> out;
  const std::int64_t span = (std::int64_t)d.tokens.size() - S - 1;
  for (int r = 0; r < rows; ++r) {
    if (r % B == 0) {
      out.emplace_back();
      out.back().S = S;
    }
    std::int64_t start = rows > 1 ? span * r / (rows - 1) : 0;
    append_window(d, clamp_start(d, start, S), S, out.back());
    out.back().B++;
  }
  return out;
}

}  // namespace onegpu::trainer
