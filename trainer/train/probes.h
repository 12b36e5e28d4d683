#pragma once
// Read-outs the pictures need, as plain library calls on a model.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/data/bpe_tokenizer.h"
#include "trainer/model/model.h"

namespace onegpu::trainer {

struct TokenProb {
  std::int32_t id = 0;
  std::string text;  // the token's bytes
  double prob = 0.0;
};

// Probability of every vocabulary token following `tokens` (the last seq_len of them are used).
std::vector<double> next_token_probs(Model& m, const std::vector<std::int32_t>& tokens);
// The k most likely next tokens after prompt, most likely first (ties: lower id first).
// Throws Error for an empty prompt or k <= 0.
std::vector<TokenProb> next_token_distribution(Model& m, const BpeTokenizer& tok, std::string_view prompt, int k);

// L2 norm of the current gradients: embedding, each block, head (final norm + LM head).
struct GradNorms {
  double embedding = 0.0;
  std::vector<double> layers;
  double head = 0.0;
};
GradNorms layer_grad_norms(const Model& m);

// 16 fixed weights of block `layer` (fp32 master values), spread evenly over the block's
// tensors; the same positions every call, so a picture can follow them across updates.
std::array<float, 16> sample_layer_weights(const Model& m, int layer);
// Their flat positions in the parameter array (for labels).
std::array<std::int64_t, 16> sample_weight_positions(const Model& m, int layer);

// The router's choice in block `layer` for each token of `tokens` (one text, last seq_len
// tokens): the k experts, most probable first, and their renormalised gates.
struct RouterChoice {
  std::int32_t token = 0;
  std::vector<std::int32_t> experts;
  std::vector<float> gates;
};
std::vector<RouterChoice> router_choices(Model& m, const std::vector<std::int32_t>& tokens, int layer);

// Writing: continues prompt with up to `tokens` tokens drawn from the model's distribution
// sharpened by `temperature` (p^(1/T)), seeded; stops early at end-of-text. Returns only the
// continuation. Throws Error for an empty prompt, tokens <= 0 or temperature <= 0.
std::string sample_continuation(Model& m, const BpeTokenizer& tok, std::string_view prompt, int tokens,
                                std::uint64_t seed, double temperature);

// Mean cross-entropy of each text (row) of a batch.
std::vector<double> per_text_loss(Model& m, const Batch& b);

}  // namespace onegpu::trainer
