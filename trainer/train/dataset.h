#pragma once
// Token streams for training and evaluation, and how batches are cut from them.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "trainer/data/bpe_tokenizer.h"
#include "trainer/model/model.h"
#include "trainer/model/params.h"

namespace onegpu::trainer {

// Documents encoded back to back, each followed by the end-of-text token.
struct TokenDataset {
  std::vector<std::int32_t> tokens;
  std::vector<std::int64_t> doc_starts;  // index of each document's first token
  static TokenDataset build(const BpeTokenizer& tok, std::span<const std::string> docs);
};

// B texts of S tokens (targets shifted by one). Half the rows start at a document's first token
// (so openings like "Once upon a" are seen at position 0, as a prompt is), half at any offset.
// Throws Error when the data is shorter than S + 1 tokens.
Batch sample_batch(const TokenDataset& d, int B, int S, Rng& rng);

// Deterministic evaluation windows: `rows` windows of S tokens spread evenly over the data.
std::vector<Batch> eval_batches(const TokenDataset& d, int rows, int B, int S);

}  // namespace onegpu::trainer
