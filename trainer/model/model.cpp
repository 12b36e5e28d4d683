#include "trainer/model/model.h"

#include <algorithm>
#include <cstring>

#include "trainer/error.h"

namespace onegpu::trainer {

namespace {
constexpr auto kAct = MemCategory::Activations;
// Activation buffers are not zeroed: every one is fully written before it is read (the few
// that are accumulated into are zeroed by name: act_zero).
Buffer<float> act(MemoryTracker& mt, std::size_t n) { return Buffer<float>(mt, kAct, n, false); }
Buffer<float> act_zero(MemoryTracker& mt, std::size_t n) { return Buffer<float>(mt, kAct, n, true); }
}  // namespace

Model::Model(const ModelConfig& c, Backend& be, MemoryTracker& mt, std::uint64_t seed)
    : cfg_(c), be_(&be), mt_(mt), params_(c, mt) {
  params_.init(seed);
}

Model::WeightView Model::view(std::int64_t offset, std::int64_t n) {
  WeightView v;
  if (exact_) {
    v.p = params_.master.data() + offset;
  } else {
    // The working fp32 copy lives only while one block runs; it is charged as activations.
    v.owned = act(mt_, (std::size_t)n);
    be_->bf16_to_f32(params_.weights.data() + offset, v.owned.data(), n);
    v.p = v.owned.data();
  }
  return v;
}

MoeShape Model::moe_shape(int T) const {
  return {T, cfg_.d_model, cfg_.n_experts, cfg_.top_k, cfg_.expert_hidden, cfg_.aux_loss_coef, cfg_.z_loss_coef};
}

void Model::begin(MicrobatchState& st, const Batch& b) const {
  if (b.B <= 0 || b.S <= 0) throw Error("batch: sizes must be positive");
  if (b.S > cfg_.seq_len) throw Error("batch: sequence longer than the model's seq_len");
  std::size_t T = (std::size_t)b.B * b.S;
  if (b.inputs.size() != T || b.targets.size() != T) throw Error("batch: token arrays do not match B*S");
  for (auto t : b.inputs)
    if (t < 0 || t >= cfg_.vocab) throw Error("batch: input token outside the vocabulary");
  for (auto t : b.targets)
    if (t >= cfg_.vocab) throw Error("batch: target token outside the vocabulary");
  release(st);
  st.batch = b;
  st.T = (int)T;
  st.layers.clear();
  st.layers.resize(cfg_.n_layers);
  st.ce_sum = 0.0;
  st.n_targets = 0;
  st.aux_sum = 0.0;
  for (auto t : b.targets) st.n_targets += t >= 0;
}

void Model::release(MicrobatchState& st) {
  for (auto& c : st.layers) c = LayerCache{};
  st.x = {};
  st.dx = {};
  st.x_final = {};
  st.rstd_f = {};
  st.h_f = {};
  st.logits = {};
}

void Model::embed_forward(MicrobatchState& st) {
  const int D = cfg_.d_model;
  st.x = act(mt_, (std::size_t)st.T * D);
  auto w = view(params_.embed_offset(), (std::int64_t)cfg_.vocab * D);
  be_->embedding_forward(w.p, st.batch.inputs.data(), st.x.data(), st.T, D);
}

void Model::layer_forward(int l, MicrobatchState& st) {
  if (l < 0 || l >= cfg_.n_layers) throw Error("layer index out of range");
  const int T = st.T, D = cfg_.d_model, H = cfg_.n_heads, dh = cfg_.head_dim(), B = st.batch.B, S = st.batch.S;
  const auto& L = params_.layer_layout();
  auto wv = view(params_.layer_offset(l), L.size);
  const float* w = wv.p;
  LayerCache& c = st.layers[l];
  c = LayerCache{};
  std::size_t TD = (std::size_t)T * D;
  c.x_in = act(mt_, TD);
  std::memcpy(c.x_in.data(), st.x.data(), TD * sizeof(float));
  c.rstd1 = act(mt_, T);
  c.h1 = act(mt_, TD);
  be_->rmsnorm_forward(c.x_in.data(), w + L.norm1, c.h1.data(), c.rstd1.data(), T, D, cfg_.norm_eps);
  c.qkv = act(mt_, 3 * TD);
  be_->matmul(c.h1.data(), w + L.wqkv, c.qkv.data(), T, D, 3 * D, false, false, false);
  be_->rope(c.qkv.data(), T, S, H, dh, false);
  c.probs = act(mt_, (std::size_t)B * H * S * S);
  c.att = act(mt_, TD);
  be_->attention_forward(c.qkv.data(), c.att.data(), c.probs.data(), B, S, H, dh);
  be_->matmul(c.att.data(), w + L.wo, st.x.data(), T, D, D, false, false, true);  // x += att Wo
  c.x_mid = act(mt_, TD);
  std::memcpy(c.x_mid.data(), st.x.data(), TD * sizeof(float));
  c.rstd2 = act(mt_, T);
  c.h2 = act(mt_, TD);
  be_->rmsnorm_forward(c.x_mid.data(), w + L.norm2, c.h2.data(), c.rstd2.data(), T, D, cfg_.norm_eps);

  MoeShape s = moe_shape(T);
  MoeWeights mw{w + L.router, w + L.experts, (long)L.expert_stride};
  const std::int32_t* forced = nullptr;
  if (l < (int)forced_.size() && !forced_[l].empty()) {
    if ((int)forced_[l].size() != T * cfg_.top_k) throw Error("forced routing: wrong size");
    forced = forced_[l].data();
  }
  moe_route(*be_, mt_, s, c.h2.data(), mw, forced, c.routing);
  std::size_t n = (std::size_t)T * cfg_.top_k;
  c.experts.xe = act(mt_, n * D);
  c.experts.u = act(mt_, n * cfg_.expert_hidden);
  c.experts.a = act(mt_, n * cfg_.expert_hidden);
  c.experts.y = act(mt_, n * D);
  moe_dispatch(*be_, s, c.routing, c.h2.data(), c.experts.xe.data());
  moe_experts_forward(*be_, s, c.routing, mw, c.experts);
  moe_combine(*be_, s, c.routing, c.experts.y.data(), st.x.data());  // x += MoE(h2)
  st.aux_sum += c.routing.aux_loss + c.routing.z_loss;
  c.filled = true;
}

void Model::head_forward(MicrobatchState& st, bool grad, const LossScales& sc) {
  const int T = st.T, D = cfg_.d_model, V = cfg_.vocab;
  auto norm = view(params_.final_norm_offset(), D);
  auto head = view(params_.head_offset(), (std::int64_t)D * V);
  st.x_final = std::move(st.x);
  st.rstd_f = act(mt_, T);
  st.h_f = act(mt_, (std::size_t)T * D);
  be_->rmsnorm_forward(st.x_final.data(), norm.p, st.h_f.data(), st.rstd_f.data(), T, D, cfg_.norm_eps);
  st.logits = act(mt_, (std::size_t)T * V);
  be_->matmul(st.h_f.data(), head.p, st.logits.data(), T, D, V, false, false, false);
  if (!grad) {
    st.ce_sum = be_->cross_entropy(st.logits.data(), st.batch.targets.data(), nullptr, T, V, 0.f);
    return;
  }
  Buffer<float> dlogits = act(mt_, (std::size_t)T * V);
  st.ce_sum = be_->cross_entropy(st.logits.data(), st.batch.targets.data(), dlogits.data(), T, V, sc.ce_scale);
  Buffer<float> dh = act(mt_, (std::size_t)T * D);
  float* g = params_.grads.data();
  be_->matmul(st.h_f.data(), dlogits.data(), g + params_.head_offset(), D, T, V, true, false, true);
  be_->matmul(dlogits.data(), head.p, dh.data(), T, V, D, false, true, false);
  st.dx = act(mt_, (std::size_t)T * D);
  be_->rmsnorm_backward(st.x_final.data(), norm.p, st.rstd_f.data(), dh.data(), st.dx.data(),
                       g + params_.final_norm_offset(), T, D);
  st.logits = {};
}

void Model::layer_backward(int l, MicrobatchState& st, const LossScales& sc) {
  LayerCache& c = st.layers.at(l);
  if (!c.filled) throw Error("layer_backward before layer_forward");
  const int T = st.T, D = cfg_.d_model, H = cfg_.n_heads, dh = cfg_.head_dim(), B = st.batch.B, S = st.batch.S;
  const int k = cfg_.top_k;
  const auto& L = params_.layer_layout();
  auto wv = view(params_.layer_offset(l), L.size);
  const float* w = wv.p;
  float* g = params_.grads.data() + params_.layer_offset(l);
  std::size_t TD = (std::size_t)T * D, n = (std::size_t)T * k;

  // MoE branch: st.dx is the gradient of the block output (and of its MoE branch).
  MoeShape s = moe_shape(T);
  MoeWeights mw{w + L.router, w + L.experts, (long)L.expert_stride};
  MoeGrads mg{g + L.router, g + L.experts, (long)L.expert_stride};
  {
    Buffer<float> dy = act(mt_, n * D), dgate = act(mt_, n), dxe = act(mt_, n * D), dh2 = act_zero(mt_, TD);
    moe_combine_backward(s, c.routing, c.experts.y.data(), st.dx.data(), dy.data(), dgate.data());
    moe_experts_backward(*be_, mt_, s, c.routing, mw, c.experts, dy.data(), dxe.data(), mg);
    moe_dispatch_backward(s, c.routing, dxe.data(), dh2.data());
    moe_route_backward(*be_, mt_, s, c.routing, c.h2.data(), mw, dgate.data(), sc.aux_scale, dh2.data(), mg);
    Buffer<float> dtmp = act(mt_, TD);
    be_->rmsnorm_backward(c.x_mid.data(), w + L.norm2, c.rstd2.data(), dh2.data(), dtmp.data(), g + L.norm2, T, D);
    be_->add(dtmp.data(), st.dx.data(), (std::int64_t)TD);  // st.dx: gradient at x_mid
  }
  c.experts = ExpertCache{};  // the MoE activations are done with: free them before attention's
  c.routing = Routing{};
  // Attention branch.
  {
    Buffer<float> datt = act(mt_, TD), dqkv = act(mt_, 3 * TD), dh1 = act(mt_, TD), dtmp = act(mt_, TD);
    be_->matmul(c.att.data(), st.dx.data(), g + L.wo, D, T, D, true, false, true);     // dWo += att^T dx
    be_->matmul(st.dx.data(), w + L.wo, datt.data(), T, D, D, false, true, false);      // datt = dx Wo^T
    be_->attention_backward(c.qkv.data(), c.probs.data(), datt.data(), dqkv.data(), B, S, H, dh);
    be_->rope(dqkv.data(), T, S, H, dh, true);
    be_->matmul(c.h1.data(), dqkv.data(), g + L.wqkv, D, T, 3 * D, true, false, true);  // dWqkv += h1^T dqkv
    be_->matmul(dqkv.data(), w + L.wqkv, dh1.data(), T, 3 * D, D, false, true, false);  // dh1 = dqkv Wqkv^T
    be_->rmsnorm_backward(c.x_in.data(), w + L.norm1, c.rstd1.data(), dh1.data(), dtmp.data(), g + L.norm1, T, D);
    be_->add(dtmp.data(), st.dx.data(), (std::int64_t)TD);  // st.dx: gradient at x_in
  }
  c = LayerCache{};
}

void Model::embed_backward(MicrobatchState& st) {
  be_->embedding_backward(st.batch.inputs.data(), st.dx.data(), params_.grads.data() + params_.embed_offset(), st.T,
                         cfg_.d_model);
  st.dx = {};
}

void Model::forward_backward(MicrobatchState& st, const Batch& b, const LossScales& sc) {
  begin(st, b);
  embed_forward(st);
  for (int l = 0; l < cfg_.n_layers; ++l) layer_forward(l, st);
  head_forward(st, true, sc);
  for (int l = cfg_.n_layers - 1; l >= 0; --l) layer_backward(l, st, sc);
  embed_backward(st);
  release(st);
}

void Model::forward(MicrobatchState& st, const Batch& b) {
  begin(st, b);
  embed_forward(st);
  for (int l = 0; l < cfg_.n_layers; ++l) layer_forward(l, st);
  head_forward(st, false, {});
}

}  // namespace onegpu::trainer
