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
  std::int64_t full_offset = 0;  // offset in the unsharded layout (== offset when not sharded)
  std::int64_t size() const { return (std::int64_t)rows * cols; }
};

// Offsets of one block's tensors, relative to the start of that block's section.
struct LayerLayout {
  std::int64_t norm1, wqkv, wo, norm2, router, experts;  // expert e: experts + e * expert_stride
  std::int64_t w1_size, expert_stride;                  // w2 at w1 + w1_size
  std::int64_t size;
};

// The part of the model one rank holds when it is split (trainer/parallel): some blocks, a
// contiguous range of every held block's experts, and maybe the embedding and the head. The
// default is the whole model.
struct ParamShard {
  std::vector<bool> layers;  // per block: held? (empty: all)
  int first_expert = 0;
  int expert_count = -1;     // -1: all experts
  bool embedding = true;
  bool head = true;          // final norm and LM head
};

class ParamStore {
 public:
  ParamStore(const ModelConfig& c, MemoryTracker& tracker);
  // A shard: held tensors only, packed in the same order (embedding, held blocks with their
  // held experts, final norm, head). Tensor names and ParamTensor::expert keep the global
  // numbering; full_offset says where each tensor sits in the whole model's layout.
  ParamStore(const ModelConfig& c, MemoryTracker& tracker, const ParamShard& shard);

  std::int64_t count() const { return count_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  const LayerLayout& layer_layout() const { return layer_; }
  // Flat ranges [begin, begin+size) of the sections.
  std::int64_t embed_offset() const { return 0; }
  std::int64_t layer_offset(int l) const {
    return layers_begin_ + (std::int64_t)(slot_.empty() ? l : slot_[(std::size_t)l]) * layer_.size;
  }
  std::int64_t final_norm_offset() const { return final_norm_; }
  std::int64_t head_offset() const { return final_norm_offset() + d_model_; }
  // Shards: which parts are here. A whole store holds everything.
  bool sharded() const { return !slot_.empty() || expert_count_ != cfg_.n_experts || !has_embedding_ || !has_head_; }
  bool holds_layer(int l) const { return slot_.empty() || slot_[(std::size_t)l] >= 0; }
  bool has_embedding() const { return has_embedding_; }
  bool has_head() const { return has_head_; }
  int first_expert() const { return first_expert_; }
  int expert_count() const { return expert_count_; }

  // Deterministic initialisation of master weights from seed; weights := bf16(master).
  // Whole stores only (a shard copies its part of an initialised whole store: copy_from).
  void init(std::uint64_t seed);
  // The master weights of init(seed) alone, drawn on `threads` threads (the same bits for any
  // count); weights, gradients and moments are left as they are.
  void init_master(std::uint64_t seed, int threads);
  // Master weights of every held tensor from a whole store of the same model; weights :=
  // bf16(master); gradients and moments zeroed.
  void copy_from(const ParamStore& whole);
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
  std::int64_t layers_begin_ = 0, count_ = 0, final_norm_ = 0;
  int n_layers_ = 0, d_model_ = 0;
  std::vector<int> slot_;  // shards: block -> position among held blocks, -1 if not held
  int first_expert_ = 0, expert_count_ = 0;
  bool has_embedding_ = true, has_head_ = true;
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
