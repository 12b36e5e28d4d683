#include "trainer/model/params.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>

#include "trainer/error.h"
#include "trainer/ops/start_threads.h"

namespace onegpu::trainer {

std::uint64_t Rng::next() {
  std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
double Rng::uniform() { return (double)(next() >> 11) * 0x1.0p-53; }
double Rng::normal() {
  double u1 = uniform(), u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

ParamStore::ParamStore(const ModelConfig& c, MemoryTracker& tracker) : ParamStore(c, tracker, ParamShard{}) {}

ParamStore::ParamStore(const ModelConfig& c, MemoryTracker& tracker, const ParamShard& shard) : cfg_(c) {
  c.validate();
  const std::int64_t D = c.d_model, E = c.n_experts, H = c.expert_hidden, V = c.vocab;
  n_layers_ = c.n_layers;
  d_model_ = c.d_model;
  first_expert_ = shard.first_expert;
  expert_count_ = shard.expert_count < 0 ? c.n_experts : shard.expert_count;
  if (first_expert_ < 0 || expert_count_ < 0 || first_expert_ + expert_count_ > c.n_experts)
    throw Error("parameter shard: expert range outside the model");
  if (!shard.layers.empty() && (int)shard.layers.size() != c.n_layers)
    throw Error("parameter shard: one flag per block expected");
  has_embedding_ = shard.embedding;
  has_head_ = shard.head;
  int held = 0;
  if (!shard.layers.empty())
    for (bool h : shard.layers) slot_.push_back(h ? held++ : -1);
  else
    held = c.n_layers;
  layer_.norm1 = 0;
  layer_.wqkv = D;
  layer_.wo = layer_.wqkv + D * 3 * D;
  layer_.norm2 = layer_.wo + D * D;
  layer_.router = layer_.norm2 + D;
  layer_.experts = layer_.router + D * E;
  layer_.w1_size = D * H;
  layer_.expert_stride = 2 * D * H;
  layer_.size = layer_.experts + expert_count_ * layer_.expert_stride;
  const std::int64_t full_layer = layer_.experts + E * layer_.expert_stride;
  layers_begin_ = has_embedding_ ? V * D : 0;
  final_norm_ = layers_begin_ + held * layer_.size;
  const std::int64_t full_final_norm = V * D + c.n_layers * full_layer;

  auto add = [&](std::string name, ParamKind k, int layer, int expert, std::int64_t off, int rows, int cols,
                 std::int64_t full) { tensors_.push_back({std::move(name), k, layer, expert, off, rows, cols, full}); };
  if (has_embedding_) add("embed", ParamKind::Embedding, -1, -1, 0, (int)V, (int)D, 0);
  for (int l = 0; l < c.n_layers; ++l) {
    if (!holds_layer(l)) continue;
    std::int64_t b = layer_offset(l), fb = V * D + l * full_layer;
    std::string p = "layers." + std::to_string(l) + ".";
    add(p + "norm1", ParamKind::Norm, l, -1, b + layer_.norm1, 1, (int)D, fb + layer_.norm1);
    add(p + "wqkv", ParamKind::Attention, l, -1, b + layer_.wqkv, (int)D, (int)(3 * D), fb + layer_.wqkv);
    add(p + "wo", ParamKind::Attention, l, -1, b + layer_.wo, (int)D, (int)D, fb + layer_.wo);
    add(p + "norm2", ParamKind::Norm, l, -1, b + layer_.norm2, 1, (int)D, fb + layer_.norm2);
    add(p + "router", ParamKind::Router, l, -1, b + layer_.router, (int)D, (int)E, fb + layer_.router);
    for (int i = 0; i < expert_count_; ++i) {
      const int e = first_expert_ + i;
      std::int64_t eb = b + layer_.experts + i * layer_.expert_stride;
      std::int64_t feb = fb + layer_.experts + e * layer_.expert_stride;
      std::string q = p + "experts." + std::to_string(e) + ".";
      add(q + "w1", ParamKind::Expert, l, e, eb, (int)D, (int)H, feb);
      add(q + "w2", ParamKind::Expert, l, e, eb + layer_.w1_size, (int)H, (int)D, feb + layer_.w1_size);
    }
  }
  count_ = final_norm_;
  if (has_head_) {
    add("final_norm", ParamKind::Norm, -1, -1, final_norm_offset(), 1, (int)D, full_final_norm);
    add("head", ParamKind::Head, -1, -1, head_offset(), (int)D, (int)V, full_final_norm + D);
    count_ = head_offset() + D * V;
  }

  auto n = (std::size_t)count_;
  weights = Buffer<bf16>(tracker, MemCategory::Weights, n);
  grads = Buffer<float>(tracker, MemCategory::Gradients, n);
  master = Buffer<float>(tracker, MemCategory::Optimizer, n);
  adam_m = Buffer<float>(tracker, MemCategory::Optimizer, n);
  adam_v = Buffer<float>(tracker, MemCategory::Optimizer, n);
}

void ParamStore::copy_from(const ParamStore& whole) {
  if (whole.sharded() || whole.count_ < count_ || whole.cfg_.n_layers != cfg_.n_layers ||
      whole.cfg_.n_experts != cfg_.n_experts || whole.cfg_.d_model != cfg_.d_model)
    throw Error("parameter shard: copy_from needs a whole store of the same model");
  for (const auto& t : tensors_)
    std::copy_n(whole.master.data() + t.full_offset, t.size(), master.data() + t.offset);
  sync_weights_from_master();
  zero_grads();
  std::fill(adam_m.begin(), adam_m.end(), 0.f);
  std::fill(adam_v.begin(), adam_v.end(), 0.f);
}

void ParamStore::init(std::uint64_t seed) {
  init_master(seed, 1);
  sync_weights_from_master();
  zero_grads();
  std::fill(adam_m.begin(), adam_m.end(), 0.f);
  std::fill(adam_v.begin(), adam_v.end(), 0.f);
}

void ParamStore::init_master(std::uint64_t seed, int threads) {
  if (sharded()) throw Error("parameter shard: initialise a whole store and copy_from it");
  // One random sequence over the tensors in order; a normal draw takes two numbers and a
  // SplitMix64 step adds a constant, so where each tensor's draws start is known up front.
  constexpr std::uint64_t kStep = 0x9e3779b97f4a7c15ull;  // Rng::next's increment
  const std::uint64_t s0 = seed * 0x2545f4914f6cdd1dull + 1;
  const double out_scale = 1.0 / std::sqrt(2.0 * cfg_.n_layers);  // residual branches add up
  std::vector<std::uint64_t> start(tensors_.size());
  std::uint64_t draws = 0;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    start[i] = s0 + draws * kStep;
    if (tensors_[i].kind != ParamKind::Norm) draws += 2 * (std::uint64_t)tensors_[i].size();
  }
  auto fill = [&](std::size_t first, std::size_t last) {
    for (std::size_t k = first; k < last; ++k) {
      const ParamTensor& t = tensors_[k];
      Rng rng(start[k]);
      float* w = master.data() + t.offset;
      double std = 0.0;
      bool ones = false;
      switch (t.kind) {
        case ParamKind::Embedding: std = 1.0; break;
        case ParamKind::Norm: ones = true; break;
        case ParamKind::Router: std = 0.1 / std::sqrt((double)t.rows); break;  // near-uniform routing at first
        case ParamKind::Head: std = 1.0 / std::sqrt((double)t.rows); break;
        case ParamKind::Attention:
        case ParamKind::Expert: {
          bool out_proj = t.name.ends_with(".wo") || t.name.ends_with(".w2");
          std = 1.0 / std::sqrt((double)t.rows) * (out_proj ? out_scale : 1.0);
          break;
        }
      }
      for (std::int64_t i = 0; i < t.size(); ++i) w[i] = ones ? 1.f : (float)(std * rng.normal());
    }
  };
  // Contiguous runs of tensors with about equal numbers of weights, one per thread.
  threads = std::max(1, threads);
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  std::size_t first = 0;
  std::int64_t done = 0;
  for (int w = 0; w < threads; ++w) {
    const std::int64_t goal = count_ * (w + 1) / threads;
    std::size_t last = first;
    while (last < tensors_.size() && (w == threads - 1 || done < goal)) done += tensors_[last++].size();
    runs.emplace_back(first, last);
    first = last;
  }
  std::vector<std::thread> pool;
  start_threads(pool, threads - 1, "a weight set-up", [&](int w) { fill(runs[(std::size_t)w].first, runs[(std::size_t)w].second); });
  fill(runs.back().first, runs.back().second);  // this thread takes the last run
  for (auto& t : pool) t.join();
}

void ParamStore::sync_weights_from_master() {
  for (std::int64_t i = 0; i < count_; ++i) weights[i] = float_to_bf16(master[i]);
}

void ParamStore::zero_grads() { std::fill(grads.begin(), grads.end(), 0.f); }

}  // namespace onegpu::trainer
