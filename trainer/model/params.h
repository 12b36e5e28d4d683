#pragma once
// Every weight of the model in one flat layout, with the five per-weight arrays of mixed
// precision training: bf16 weights (2 bytes), fp32 gradients (4), fp32 master copy (4) and two
// fp32 Adam moments (4 + 4): 18 bytes per weight, each array charged to its memory category.
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/memory/tracker.h"
#include "trainer/model/config.h"
#include "trainer/ops/bf16.h"

namespace onegpu::trainer {

enum class ParamKind { Embedding, Attention, Norm, Router, Expert, Head };

struct ParamTensor {
  std::string name;  // e.g. "layers.2.experts.5.w1"
  ParamKind kind;
  int layer = -1;    // -1 outside the blocks
  int expert = -1;   // -1 outside the experts
  std::int64_t offset = 0;
  int rows = 0, cols = 0;
  std::int64_t size() const { return (std::int64_t)rows * cols; }
};

// Offsets of one block's tensors, relative to the start of that block's section.
struct LayerLayout {
  std::int64_t norm1, wqkv, wo, norm2, router, experts;  // expert e: experts + e * expert_stride
  std::int64_t w1_size, expert_stride;                  // w2 at w1 + w1_size
  std::int64_t size;
};

class ParamStore {
 public:
  ParamStore(const ModelConfig& c, MemoryTracker& tracker);

  std::int64_t count() const { return count_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  const LayerLayout& layer_layout() const { return layer_; }
  // Flat ranges [begin, begin+size) of the sections.
  std::int64_t embed_offset() const { return 0; }
  std::int64_t layer_offset(int l) const { return layers_begin_ + (std::int64_t)l * layer_.size; }
  std::int64_t final_norm_offset() const { return layer_offset(n_layers_); }
  std::int64_t head_offset() const { return final_norm_offset() + d_model_; }

  // Deterministic initialisation of master weights from seed; weights := bf16(master).
  void init(std::uint64_t seed);
  // weights := bf16(master), after an optimizer step or a checkpoint load.
  void sync_weights_from_master();
  void zero_grads();

  Buffer<bf16> weights;   // MemCategory::Weights
  Buffer<float> grads;    // MemCategory::Gradients
  Buffer<float> master;   // MemCategory::Optimizer
  Buffer<float> adam_m;   // MemCategory::Optimizer
  Buffer<float> adam_v;   // MemCategory::Optimizer

 private:
  ModelConfig cfg_;
  std::vector<ParamTensor> tensors_;
  LayerLayout layer_{};
  std::int64_t layers_begin_ = 0, count_ = 0;
  int n_layers_ = 0, d_model_ = 0;
};

// Deterministic generator (SplitMix64) used for init and data sampling: same seed, same numbers
// on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) : s_(seed) {}
  std::uint64_t next();
  double uniform();  // [0, 1)
  double normal();   // standard normal (Box-Muller)
  std::uint64_t state() const { return s_; }
  void set_state(std::uint64_t s) { s_ = s; }

 private:
  std::uint64_t s_;
};

}  // namespace onegpu::trainer
