#pragma once
// Model shape and the named presets. The presets are narrow (d_model 64) so they train on two
// CPU cores, with most weights in the experts, as in the storyboard.
#include <cstdint>
#include <string>

namespace onegpu::trainer {

struct ModelConfig {
  std::string name = "story";
  int vocab = 1024;         // set from the tokenizer before building a model
  int d_model = 64;
  int n_heads = 4;
  int n_layers = 4;
  int n_experts = 16;
  int top_k = 2;
  int expert_hidden = 128;  // hidden width of each expert's MLP
  int seq_len = 64;         // tokens per text in a batch
  float norm_eps = 1e-5f;
  float aux_loss_coef = 0.01f;  // Switch load-balancing loss
  float z_loss_coef = 0.001f;   // router z-loss

  int head_dim() const { return d_model / n_heads; }
  // Throws Error when a size is zero or negative, heads do not divide d_model, top_k > experts...
  void validate() const;
};

// "story" (4 layers, 16 experts, top-2), "story8" (8 layers), "scale" (32 layers, 64 experts),
// "wide" (d_model 1024, 4 layers, 8 experts of 2048, top-2, texts of 1024 tokens: a GPU size).
// Throws Error for an unknown name.
ModelConfig model_preset(const std::string& name);

// Parameter counts by kind; total() equals the model's parameter count.
struct ParamBreakdown {
  std::int64_t embeddings = 0;  // token embedding table
  std::int64_t attention = 0;   // q, k, v, o projections
  std::int64_t norms = 0;       // RMSNorm gains (two per block, one final)
  std::int64_t router = 0;      // router projections
  std::int64_t experts = 0;     // expert MLPs
  std::int64_t head = 0;        // LM head
  std::int64_t total() const { return embeddings + attention + norms + router + experts + head; }
};
ParamBreakdown param_breakdown(const ModelConfig& c);

// "key=value;..." form stored in checkpoints; parse throws Error on anything malformed.
std::string config_to_string(const ModelConfig& c);
ModelConfig config_from_string(const std::string& s);

}  // namespace onegpu::trainer
