#include "trainer/model/params.h"

#include <algorithm>
#include <cmath>

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

ParamStore::ParamStore(const ModelConfig& c, MemoryTracker& tracker) : cfg_(c) {
  c.validate();
  const std::int64_t D = c.d_model, E = c.n_experts, H = c.expert_hidden, V = c.vocab;
  n_layers_ = c.n_layers;
  d_model_ = c.d_model;
  layer_.norm1 = 0;
  layer_.wqkv = D;
  layer_.wo = layer_.wqkv + D * 3 * D;
  layer_.norm2 = layer_.wo + D * D;
  layer_.router = layer_.norm2 + D;
  layer_.experts = layer_.router + D * E;
  layer_.w1_size = D * H;
  layer_.expert_stride = 2 * D * H;
  layer_.size = layer_.experts + E * layer_.expert_stride;
  layers_begin_ = V * D;

  auto add = [&](std::string name, ParamKind k, int layer, int expert, std::int64_t off, int rows, int cols) {
    tensors_.push_back({std::move(name), k, layer, expert, off, rows, cols});
  };
  add("embed", ParamKind::Embedding, -1, -1, 0, (int)V, (int)D);
  for (int l = 0; l < c.n_layers; ++l) {
    std::int64_t b = layer_offset(l);
    std::string p = "layers." + std::to_string(l) + ".";
    add(p + "norm1", ParamKind::Norm, l, -1, b + layer_.norm1, 1, (int)D);
    add(p + "wqkv", ParamKind::Attention, l, -1, b + layer_.wqkv, (int)D, (int)(3 * D));
    add(p + "wo", ParamKind::Attention, l, -1, b + layer_.wo, (int)D, (int)D);
    add(p + "norm2", ParamKind::Norm, l, -1, b + layer_.norm2, 1, (int)D);
    add(p + "router", ParamKind::Router, l, -1, b + layer_.router, (int)D, (int)E);
    for (int e = 0; e < c.n_experts; ++e) {
      std::int64_t eb = b + layer_.experts + e * layer_.expert_stride;
      std::string q = p + "experts." + std::to_string(e) + ".";
      add(q + "w1", ParamKind::Expert, l, e, eb, (int)D, (int)H);
      add(q + "w2", ParamKind::Expert, l, e, eb + layer_.w1_size, (int)H, (int)D);
    }
  }
  add("final_norm", ParamKind::Norm, -1, -1, final_norm_offset(), 1, (int)D);
  add("head", ParamKind::Head, -1, -1, head_offset(), (int)D, (int)V);
  count_ = head_offset() + D * V;

  auto n = (std::size_t)count_;
  weights = Buffer<bf16>(tracker, MemCategory::Weights, n);
  grads = Buffer<float>(tracker, MemCategory::Gradients, n);
  master = Buffer<float>(tracker, MemCategory::Optimizer, n);
  adam_m = Buffer<float>(tracker, MemCategory::Optimizer, n);
  adam_v = Buffer<float>(tracker, MemCategory::Optimizer, n);
}

void ParamStore::init(std::uint64_t seed) {
  Rng rng(seed * 0x2545f4914f6cdd1dull + 1);
  const double out_scale = 1.0 / std::sqrt(2.0 * cfg_.n_layers);  // residual branches add up
  for (const auto& t : tensors_) {
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
  sync_weights_from_master();
  zero_grads();
  std::fill(adam_m.begin(), adam_m.end(), 0.f);
  std::fill(adam_v.begin(), adam_v.end(), 0.f);
}

void ParamStore::sync_weights_from_master() {
  for (std::int64_t i = 0; i < count_; ++i) weights[i] = float_to_bf16(master[i]);
}

void ParamStore::zero_grads() { std::fill(grads.begin(), grads.end(), 0.f); }

}  // namespace onegpu::trainer
