#include "trainer/model/model.h"

#include <algorithm>
#include <cstring>

#include "trainer/error.h"

namespace onegpu::trainer {

namespace {
constexpr auto kAct = MemCategory::Activations;
// Activation buffers are not zeroed: every one is fully written before it is read (the one
// that is accumulated into, dh2, is cleared by the backend: Backend::zero).
Buffer<float> act(MemoryTracker& mt, std::size_t n) { return Buffer<float>(mt, kAct, n, false); }

}  // namespace

Model::Model(const ModelConfig& c, Backend& be, MemoryTracker& mt, std::uint64_t seed)
    : cfg_(c), be_(&be), mt_(mt), params_(c, mt) {
  params_.init(seed);
}

Model::Model(const ModelConfig& c, Backend& be, MemoryTracker& mt, const ParamShard& shard, const ParamStore& whole)
    : cfg_(c), be_(&be), mt_(mt), params_(c, mt, shard) {
  params_.copy_from(whole);
}

Model::Model(const ModelConfig& c, Backend& be, MemoryTracker& mt, ParamStore params)
    : cfg_(c), be_(&be), mt_(mt), params_(std::move(params)) {}

Model::WeightView Model::view(Backend& be, std::int64_t offset, std::int64_t n) {
  WeightView v;
  if (exact_) {
    v.p = params_.master.data() + offset;
  } else if (const float* p = wide_ ? wide_->wide(params_.weights.data() + offset, offset, n) : nullptr) {
    v.owned = Buffer<float>::shared(mt_, kAct, const_cast<float*>(p), (std::size_t)n);  // charged as the copy
    v.p = p;
  } else {
    // The working fp32 copy lives only while one block runs; it is charged as activations.
    v.owned = act(mt_, (std::size_t)n);
    be.bf16_to_f32(params_.weights.data() + offset, v.owned.data(), n);
    v.p = v.owned.data();
  }
  return v;
}

MoeShape Model::moe_shape(int T) const {
  return {T, cfg_.d_model, cfg_.n_experts, cfg_.top_k, cfg_.expert_hidden, cfg_.aux_loss_coef, cfg_.z_loss_coef};
}

std::size_t MicrobatchState::checked(int l) const {
  const long i = (long)l - layer0;
  if (i < 0 || i >= (long)layer_caches.size())
    throw Error("microbatch state: layer " + std::to_string(l) + " is not one of the layers it runs");
  return (std::size_t)i;
}

void Model::begin(MicrobatchState& st, const Batch& b, int first, int count) const {
  if (count < 0) first = 0, count = cfg_.n_layers;
  if (first < 0 || first + count > cfg_.n_layers) throw Error("microbatch state: layers outside the model");
  if (b.B <= 0 || b.S <= 0) throw Error("batch: sizes must be positive");
  if (b.S > cfg_.seq_len) throw Error("batch: sequence longer than the model's seq_len");
  std::size_t T = (std::size_t)b.B * b.S;
  if (b.inputs.size() != T || b.targets.size() != T) throw Error("batch: token arrays do not match B*S");
  for (auto t : b.inputs)
    if (t < 0 || t >= cfg_.vocab) throw Error("batch: input token outside the vocabulary");
  for (auto t : b.targets)
    if (t >= cfg_.vocab) throw Error("batch: target token outside the vocabulary");
  release(st);  // every layer's cache is empty: a state used before keeps its array of them
  st.batch = b;
  st.T = (int)T;
  st.layer0 = first;
  if (st.layer_caches.size() != (std::size_t)count) {
    st.layer_caches.clear();
    st.layer_caches.resize((std::size_t)count);
  }
  st.ce_sum = 0.0;
  st.n_targets = 0;
  st.aux_sum = 0.0;
  for (auto t : b.targets) st.n_targets += t >= 0;
}

void Model::release(MicrobatchState& st) {
  for (auto& c : st.layer_caches) c = LayerCache{};
  st.x = {};
  st.dx = {};
  st.x_final = {};
  st.rstd_f = {};
  st.h_f = {};
  st.dlogits_head = {};
  st.dh_final = {};
  st.logits = {};
}

void Model::embed_forward(MicrobatchState& st) {
  Backend& be = backend(st);
  if (!params_.has_embedding()) throw Error("embedding is not held by this model shard");
  const int D = cfg_.d_model;
  st.x = act(mt_, (std::size_t)st.T * D);
  auto w = view(be, params_.embed_offset(), (std::int64_t)cfg_.vocab * D);
  be.embedding_forward(w.p, st.batch.inputs.data(), st.x.data(), st.T, D);
}

const float* Model::check_layer(int l) const {
  if (l < 0 || l >= cfg_.n_layers) throw Error("layer index out of range");
  if (!params_.holds_layer(l)) throw Error("layer " + std::to_string(l) + " is not held by this model shard");
  return nullptr;
}

void Model::layer_forward(int l, MicrobatchState& st) {
  Backend& be = backend(st);
  check_layer(l);
  const auto& L = params_.layer_layout();
  auto wv = view(be, params_.layer_offset(l), L.size);
  fwd_attention(l, st, wv.p);
  fwd_experts(l, st, wv.p + L.experts);
  fwd_combine(l, st);
}

void Model::layer_forward_attention(int l, MicrobatchState& st) {
  Backend& be = backend(st);
  check_layer(l);
  auto wv = view(be, params_.layer_offset(l), params_.layer_layout().experts);
  fwd_attention(l, st, wv.p);
}

void Model::layer_forward_experts(int l, MicrobatchState& st) {
  Backend& be = backend(st);
  check_layer(l);
  if (params_.expert_count() != cfg_.n_experts) throw Error("layer_forward_experts needs every expert on this rank");
  const auto& L = params_.layer_layout();
  auto wv = view(be, params_.layer_offset(l) + L.experts, L.size - L.experts);
  fwd_experts(l, st, wv.p);
}

void Model::layer_forward_combine(int l, MicrobatchState& st) {
  check_layer(l);
  fwd_combine(l, st);
}

void Model::fwd_attention(int l, MicrobatchState& st, const float* w) {
  Backend& be = backend(st);
  const int T = st.T, D = cfg_.d_model, H = cfg_.n_heads, dh = cfg_.head_dim(), B = st.batch.B, S = st.batch.S;
  const auto& L = params_.layer_layout();
  LayerCache& c = st.layer(l);
  c = LayerCache{};
  std::size_t TD = (std::size_t)T * D;
  c.x_in = act(mt_, TD);
  be.copy(st.x.data(), c.x_in.data(), (std::int64_t)TD);
  c.rstd1 = act(mt_, T);
  c.h1 = act(mt_, TD);
  be.rmsnorm_forward(c.x_in.data(), w + L.norm1, c.h1.data(), c.rstd1.data(), T, D, cfg_.norm_eps);
  c.qkv = act(mt_, 3 * TD);
  be.matmul(c.h1.data(), w + L.wqkv, c.qkv.data(), T, D, 3 * D, false, false, false);
  be.rope(c.qkv.data(), T, S, H, dh, false);
  c.probs = act(mt_, (std::size_t)B * H * S * S);
  c.att = act(mt_, TD);
  be.attention_forward(c.qkv.data(), c.att.data(), c.probs.data(), B, S, H, dh);
  be.matmul(c.att.data(), w + L.wo, st.x.data(), T, D, D, false, false, true);  // x += att Wo
  c.x_mid = act(mt_, TD);
  be.copy(st.x.data(), c.x_mid.data(), (std::int64_t)TD);
  c.rstd2 = act(mt_, T);
  c.h2 = act(mt_, TD);
  be.rmsnorm_forward(c.x_mid.data(), w + L.norm2, c.h2.data(), c.rstd2.data(), T, D, cfg_.norm_eps);

  MoeShape s = moe_shape(T);
  MoeWeights mw{w + L.router, nullptr, (long)L.expert_stride};
  const std::int32_t* forced = nullptr;
  if (l < (int)forced_.size() && !forced_[l].empty()) {
    if ((int)forced_[l].size() != T * cfg_.top_k) throw Error("forced routing: wrong size");
    forced = forced_[l].data();
  }
  moe_route(be, mt_, s, c.h2.data(), mw, forced, c.routing);
  std::size_t n = (std::size_t)T * cfg_.top_k;
  c.experts.xe = act(mt_, n * D);
  moe_dispatch(be, s, c.routing, c.h2.data(), c.experts.xe.data());
}

void Model::fwd_experts(int l, MicrobatchState& st, const float* we) {
  Backend& be = backend(st);
  LayerCache& c = st.layer(l);
  const int D = cfg_.d_model;
  const std::size_t n = (std::size_t)st.T * cfg_.top_k;
  c.experts.u = act(mt_, n * cfg_.expert_hidden);
  c.experts.a = act(mt_, n * cfg_.expert_hidden);
  c.experts.y = act(mt_, n * D);
  MoeWeights mw{nullptr, we, (long)params_.layer_layout().expert_stride};
  moe_experts_forward(be, moe_shape(st.T), c.routing, mw, c.experts);
}

void Model::fwd_combine(int l, MicrobatchState& st) {
  Backend& be = backend(st);
  LayerCache& c = st.layer(l);
  moe_combine(be, moe_shape(st.T), c.routing, c.experts.y.data(), st.x.data());  // x += MoE(h2)
  st.aux_sum += c.routing.aux_loss + c.routing.z_loss;
  c.filled = true;
}

void Model::experts_forward(int l, const std::vector<std::int32_t>& offsets, ExpertCache& c) {
  check_layer(l);
  const auto& L = params_.layer_layout();
  const int E = params_.expert_count(), D = cfg_.d_model, Hd = cfg_.expert_hidden;
  if ((int)offsets.size() != E + 1) throw Error("experts_forward: one offset per local expert, plus one");
  const std::size_t rows = c.xe.size() / (std::size_t)D;
  if (offsets.front() < 0 || (std::size_t)offsets.back() > rows) throw Error("experts_forward: rows out of range");
  if (c.u.size() != rows * Hd) c.u = act(mt_, rows * Hd);
  if (c.a.size() != rows * Hd) c.a = act(mt_, rows * Hd);
  if (c.y.size() != rows * D) c.y = act(mt_, rows * D);
  auto wv = view(*be_, params_.layer_offset(l) + L.experts, L.size - L.experts);
  Routing r;
  r.offsets = offsets;
  MoeShape s{(int)rows, D, E, 1, Hd, cfg_.aux_loss_coef, cfg_.z_loss_coef};
  moe_experts_forward(*be_, s, r, MoeWeights{nullptr, wv.p, (long)L.expert_stride}, c);
}

void Model::experts_backward(int l, const std::vector<std::int32_t>& offsets, const ExpertCache& c, const float* dy,
                             float* dxe) {
  check_layer(l);
  const auto& L = params_.layer_layout();
  const int E = params_.expert_count(), D = cfg_.d_model;
  if ((int)offsets.size() != E + 1) throw Error("experts_backward: one offset per local expert, plus one");
  const std::size_t rows = c.xe.size() / (std::size_t)D;
  if (offsets.front() < 0 || (std::size_t)offsets.back() > rows) throw Error("experts_backward: rows out of range");
  auto wv = view(*be_, params_.layer_offset(l) + L.experts, L.size - L.experts);
  Routing r;
  r.offsets = offsets;
  MoeShape s{(int)rows, D, E, 1, cfg_.expert_hidden, cfg_.aux_loss_coef, cfg_.z_loss_coef};
  float* g = params_.grads.data() + params_.layer_offset(l) + L.experts;
  moe_experts_backward(*be_, mt_, s, r, MoeWeights{nullptr, wv.p, (long)L.expert_stride}, c, dy, dxe,
                       MoeGrads{nullptr, g, (long)L.expert_stride});
}

void Model::head_forward(MicrobatchState& st, bool grad, const LossScales& sc, bool defer_weight) {
  Backend& be = backend(st);
  if (!params_.has_head()) throw Error("head is not held by this model shard");
  const int T = st.T, D = cfg_.d_model, V = cfg_.vocab;
  auto norm = view(be, params_.final_norm_offset(), D);
  auto head = view(be, params_.head_offset(), (std::int64_t)D * V);
  st.x_final = std::move(st.x);
  st.rstd_f = act(mt_, T);
  st.h_f = act(mt_, (std::size_t)T * D);
  be.rmsnorm_forward(st.x_final.data(), norm.p, st.h_f.data(), st.rstd_f.data(), T, D, cfg_.norm_eps);
  st.logits = act(mt_, (std::size_t)T * V);
  be.matmul(st.h_f.data(), head.p, st.logits.data(), T, D, V, false, false, false);
  if (st.probe_row >= 0 && st.probe_row < T) {
    be.sync();  // the host reads the logits
    st.probe_logits.assign(st.logits.data() + (std::size_t)st.probe_row * V, st.logits.data() + (std::size_t)(st.probe_row + 1) * V);
  }
  if (!grad) {
    st.ce_sum = be.cross_entropy(st.logits.data(), st.batch.targets.data(), nullptr, T, V, 0.f);
    return;
  }
  Buffer<float> dlogits = act(mt_, (std::size_t)T * V);
  if (!st.shard) {
    st.ce_sum = be.cross_entropy(st.logits.data(), st.batch.targets.data(), dlogits.data(), T, V, sc.ce_scale);
  } else {
    // One row a call gives each row's own loss (the sum adds the rows from 0.0 in order), so
    // the shards' rows added in order give the whole microbatch's sum, bit for bit.
    st.row_ce.resize((std::size_t)T);
    st.ce_sum = 0.0;
    for (int t = 0; t < T; ++t) {
      st.row_ce[(std::size_t)t] = be.cross_entropy(st.logits.data() + (std::size_t)t * V, st.batch.targets.data() + t,
                                                   dlogits.data() + (std::size_t)t * V, 1, V, sc.ce_scale);
      st.ce_sum += st.row_ce[(std::size_t)t];
    }
  }
  Buffer<float> dh = act(mt_, (std::size_t)T * D);
  float* g = params_.grads.data();
  if (!defer_weight) be.matmul(st.h_f.data(), dlogits.data(), g + params_.head_offset(), D, T, V, true, false, true);
  be.matmul(dlogits.data(), head.p, dh.data(), T, V, D, false, true, false);
  st.dx = act(mt_, (std::size_t)T * D);
  be.rmsnorm_backward(st.x_final.data(), norm.p, st.rstd_f.data(), dh.data(), st.dx.data(),
                      st.shard ? nullptr : g + params_.final_norm_offset(), T, D);  // a shard's gain comes later
  if (st.shard) st.dh_final = std::move(dh);
  st.logits = {};
  if (defer_weight) st.dlogits_head = std::move(dlogits);
}

void Model::head_backward_weight(MicrobatchState& st) {
  Backend& be = backend(st);
  if (st.dlogits_head.empty()) throw Error("head_backward_weight without a deferred head_forward");
  float* g = params_.grads.data() + params_.head_offset();
  be.matmul(st.h_f.data(), st.dlogits_head.data(), g, cfg_.d_model, st.T, cfg_.vocab, true, false, true);  // dWh += h^T dl
  st.dlogits_head = {};
}

void Model::layer_backward(int l, MicrobatchState& st, const LossScales& sc) {
  Backend& be = backend(st);
  check_layer(l);
  if (!st.layer(l).filled) throw Error("layer_backward before layer_forward");
  const auto& L = params_.layer_layout();
  auto wv = view(be, params_.layer_offset(l), L.size);
  bwd_combine(l, st);
  bwd_experts(l, st, wv.p + L.experts);
  bwd_attention(l, st, sc, wv.p);
}

void Model::layer_backward_input(int l, MicrobatchState& st, const LossScales& sc) {
  Backend& be = backend(st);
  check_layer(l);
  if (!st.layer(l).filled) throw Error("layer_backward_input before layer_forward");
  if (params_.expert_count() != cfg_.n_experts) throw Error("layer_backward_input needs every expert on this rank");
  const auto& L = params_.layer_layout();
  auto wv = view(be, params_.layer_offset(l), L.size);
  bwd_combine(l, st);
  LayerCache& c = st.layer(l);
  c.du = act(mt_, (std::size_t)st.T * cfg_.top_k * cfg_.expert_hidden);
  moe_experts_backward_input(be, mt_, moe_shape(st.T), c.routing,
                             MoeWeights{nullptr, wv.p + L.experts, (long)L.expert_stride}, c.experts, c.dy.data(),
                             c.dxe.data(), c.du.data());
  bwd_attention_input(l, st, sc, wv.p);
}

void Model::layer_backward_attention_input(int l, MicrobatchState& st, const LossScales& sc) {
  Backend& be = backend(st);
  check_layer(l);
  if (st.layer(l).dh2.empty()) throw Error("layer_backward_attention_input before layer_backward_combine");
  auto wv = view(be, params_.layer_offset(l), params_.layer_layout().experts);
  bwd_attention_input(l, st, sc, wv.p);
}

void Model::bwd_attention_input(int l, MicrobatchState& st, const LossScales& sc, const float* w) {
  Backend& be = backend(st);
  const int T = st.T, D = cfg_.d_model, H = cfg_.n_heads, dh = cfg_.head_dim(), B = st.batch.B, S = st.batch.S;
  const auto& L = params_.layer_layout();
  float* g = params_.grads.data() + params_.layer_offset(l);
  const std::size_t TD = (std::size_t)T * D;
  LayerCache& c = st.layer(l);
  MoeShape s = moe_shape(T);
  moe_dispatch_backward(be, s, c.routing, c.dxe.data(), c.dh2.data());
  c.dlogits = act(mt_, (std::size_t)T * cfg_.n_experts);
  moe_route_backward_input(be, s, c.routing, MoeWeights{w + L.router, nullptr, (long)L.expert_stride}, c.dgate.data(),
                           sc.aux_scale, c.dh2.data(), c.dlogits.data());
  {
    Buffer<float> dtmp = act(mt_, TD);
    be.rmsnorm_backward(c.x_mid.data(), w + L.norm2, c.rstd2.data(), c.dh2.data(), dtmp.data(),
                        st.shard ? nullptr : g + L.norm2, T, D);  // a shard's gains come later
    be.add(dtmp.data(), st.dx.data(), (std::int64_t)TD);  // st.dx: gradient at x_mid
  }
  if (!st.shard) c.dh2 = {};
  c.dxe = {};
  c.dgate = {};
  c.experts.u = {};
  c.experts.y = {};
  // Attention branch, input gradient only.
  c.dx_mid = act(mt_, TD);
  be.copy(st.dx.data(), c.dx_mid.data(), (std::int64_t)TD);
  {
    Buffer<float> datt = act(mt_, TD), dh1 = act(mt_, TD), dtmp = act(mt_, TD);
    c.dqkv = act(mt_, 3 * TD);
    be.matmul(st.dx.data(), w + L.wo, datt.data(), T, D, D, false, true, false);  // datt = dx Wo^T
    be.attention_backward(c.qkv.data(), c.probs.data(), datt.data(), c.dqkv.data(), B, S, H, dh);
    be.rope(c.dqkv.data(), T, S, H, dh, true);
    be.matmul(c.dqkv.data(), w + L.wqkv, dh1.data(), T, 3 * D, D, false, true, false);  // dh1 = dqkv Wqkv^T
    be.rmsnorm_backward(c.x_in.data(), w + L.norm1, c.rstd1.data(), dh1.data(), dtmp.data(),
                        st.shard ? nullptr : g + L.norm1, T, D);
    be.add(dtmp.data(), st.dx.data(), (std::int64_t)TD);  // st.dx: gradient at x_in
    if (st.shard) c.dh1 = std::move(dh1);
  }
  // Keep only what the weight part reads: h1, att, h2, routing, expert inputs and activations
  // (and the norms' inputs when their gains' gradients come later).
  c.qkv = {};
  c.probs = {};
  if (!st.shard) {
    c.x_in = {};
    c.rstd1 = {};
    c.x_mid = {};
    c.rstd2 = {};
  }
  c.filled = false;
  c.weight_pending = true;
}

void Model::layer_backward_weight(int l, MicrobatchState& st) {
  Backend& be = backend(st);
  check_layer(l);
  LayerCache& c = st.layer(l);
  if (!c.weight_pending) throw Error("layer_backward_weight before layer_backward_input");
  const int T = st.T, D = cfg_.d_model;
  const auto& L = params_.layer_layout();
  float* g = params_.grads.data() + params_.layer_offset(l);
  MoeShape s = moe_shape(T);
  if (!c.du.empty())  // the experts ran here (not on other ranks)
    moe_experts_backward_weight(be, s, c.routing, c.experts, c.dy.data(), c.du.data(),
                                MoeGrads{nullptr, g + L.experts, (long)L.expert_stride});
  moe_route_backward_weight(be, s, c.h2.data(), c.dlogits.data(), MoeGrads{g + L.router, nullptr, (long)L.expert_stride});
  be.matmul(c.att.data(), c.dx_mid.data(), g + L.wo, D, T, D, true, false, true);     // dWo += att^T dx
  be.matmul(c.h1.data(), c.dqkv.data(), g + L.wqkv, D, T, 3 * D, true, false, true);  // dWqkv += h1^T dqkv
  c = LayerCache{};
}

void Model::experts_backward_input(int l, const std::vector<std::int32_t>& offsets, const ExpertCache& c,
                                   const float* dy, float* dxe, float* du) {
  check_layer(l);
  const auto& L = params_.layer_layout();
  const int E = params_.expert_count(), D = cfg_.d_model;
  if ((int)offsets.size() != E + 1) throw Error("experts_backward_input: one offset per local expert, plus one");
  const std::size_t rows = c.xe.size() / (std::size_t)D;
  if (offsets.front() < 0 || (std::size_t)offsets.back() > rows) throw Error("experts_backward_input: rows out of range");
  auto wv = view(*be_, params_.layer_offset(l) + L.experts, L.size - L.experts);
  Routing r;
  r.offsets = offsets;
  MoeShape s{(int)rows, D, E, 1, cfg_.expert_hidden, cfg_.aux_loss_coef, cfg_.z_loss_coef};
  moe_experts_backward_input(*be_, mt_, s, r, MoeWeights{nullptr, wv.p, (long)L.expert_stride}, c, dy, dxe, du);
}

void Model::experts_backward_weight(int l, const std::vector<std::int32_t>& offsets, const ExpertCache& c,
                                    const float* dy, const float* du) {
  check_layer(l);
  const auto& L = params_.layer_layout();
  const int E = params_.expert_count(), D = cfg_.d_model;
  if ((int)offsets.size() != E + 1) throw Error("experts_backward_weight: one offset per local expert, plus one");
  const std::size_t rows = c.xe.size() / (std::size_t)D;
  if (offsets.front() < 0 || (std::size_t)offsets.back() > rows) throw Error("experts_backward_weight: rows out of range");
  Routing r;
  r.offsets = offsets;
  MoeShape s{(int)rows, D, E, 1, cfg_.expert_hidden, cfg_.aux_loss_coef, cfg_.z_loss_coef};
  float* g = params_.grads.data() + params_.layer_offset(l) + L.experts;
  moe_experts_backward_weight(*be_, s, r, c, dy, du, MoeGrads{nullptr, g, (long)L.expert_stride});
}

void Model::layer_backward_combine(int l, MicrobatchState& st) {
  check_layer(l);
  if (!st.layer(l).filled) throw Error("layer_backward before layer_forward");
  bwd_combine(l, st);
}

void Model::layer_backward_experts(int l, MicrobatchState& st) {
  Backend& be = backend(st);
  check_layer(l);
  if (params_.expert_count() != cfg_.n_experts) throw Error("layer_backward_experts needs every expert on this rank");
  const auto& L = params_.layer_layout();
  auto wv = view(be, params_.layer_offset(l) + L.experts, L.size - L.experts);
  bwd_experts(l, st, wv.p);
}

void Model::layer_backward_attention(int l, MicrobatchState& st, const LossScales& sc) {
  Backend& be = backend(st);
  check_layer(l);
  if (st.layer(l).dh2.empty()) throw Error("layer_backward_attention before layer_backward_combine");
  auto wv = view(be, params_.layer_offset(l), params_.layer_layout().experts);
  bwd_attention(l, st, sc, wv.p);
}

void Model::bwd_combine(int l, MicrobatchState& st) {
  Backend& be = backend(st);
  LayerCache& c = st.layer(l);
  const int T = st.T, D = cfg_.d_model;
  std::size_t TD = (std::size_t)T * D, n = (std::size_t)T * cfg_.top_k;
  // st.dx is the gradient of the block output (and of its MoE branch).
  c.dy = act(mt_, n * D);
  c.dgate = act(mt_, n);
  c.dxe = act(mt_, n * D);
  c.dh2 = act(mt_, TD);
  be.zero(c.dh2.data(), (std::int64_t)TD);  // by the backend: a device clears it without a wait
  moe_combine_backward(be, moe_shape(T), c.routing, c.experts.y.data(), st.dx.data(), c.dy.data(), c.dgate.data());
}

void Model::bwd_experts(int l, MicrobatchState& st, const float* we) {
  Backend& be = backend(st);
  LayerCache& c = st.layer(l);
  const auto& L = params_.layer_layout();
  float* g = params_.grads.data() + params_.layer_offset(l) + L.experts;
  moe_experts_backward(be, mt_, moe_shape(st.T), c.routing, MoeWeights{nullptr, we, (long)L.expert_stride},
                       c.experts, c.dy.data(), c.dxe.data(), MoeGrads{nullptr, g, (long)L.expert_stride});
}

void Model::bwd_attention(int l, MicrobatchState& st, const LossScales& sc, const float* w) {
  Backend& be = backend(st);
  LayerCache& c = st.layer(l);
  const int T = st.T, D = cfg_.d_model, H = cfg_.n_heads, dh = cfg_.head_dim(), B = st.batch.B, S = st.batch.S;
  const auto& L = params_.layer_layout();
  float* g = params_.grads.data() + params_.layer_offset(l);
  std::size_t TD = (std::size_t)T * D;
  MoeShape s = moe_shape(T);
  {
    MoeWeights mw{w + L.router, nullptr, (long)L.expert_stride};
    MoeGrads mg{g + L.router, nullptr, (long)L.expert_stride};
    moe_dispatch_backward(be, s, c.routing, c.dxe.data(), c.dh2.data());
    moe_route_backward(be, mt_, s, c.routing, c.h2.data(), mw, c.dgate.data(), sc.aux_scale, c.dh2.data(), mg);
    Buffer<float> dtmp = act(mt_, TD);
    be.rmsnorm_backward(c.x_mid.data(), w + L.norm2, c.rstd2.data(), c.dh2.data(), dtmp.data(), g + L.norm2, T, D);
    be.add(dtmp.data(), st.dx.data(), (std::int64_t)TD);  // st.dx: gradient at x_mid
  }
  // The MoE activations are done with: free them before attention's.
  c.dh2 = {};
  c.dxe = {};
  c.dgate = {};
  c.dy = {};
  c.experts = ExpertCache{};
  c.routing = Routing{};
  // Attention branch.
  {
    Buffer<float> datt = act(mt_, TD), dqkv = act(mt_, 3 * TD), dh1 = act(mt_, TD), dtmp = act(mt_, TD);
    be.matmul(c.att.data(), st.dx.data(), g + L.wo, D, T, D, true, false, true);     // dWo += att^T dx
    be.matmul(st.dx.data(), w + L.wo, datt.data(), T, D, D, false, true, false);      // datt = dx Wo^T
    be.attention_backward(c.qkv.data(), c.probs.data(), datt.data(), dqkv.data(), B, S, H, dh);
    be.rope(dqkv.data(), T, S, H, dh, true);
    be.matmul(c.h1.data(), dqkv.data(), g + L.wqkv, D, T, 3 * D, true, false, true);  // dWqkv += h1^T dqkv
    be.matmul(dqkv.data(), w + L.wqkv, dh1.data(), T, 3 * D, D, false, true, false);  // dh1 = dqkv Wqkv^T
    be.rmsnorm_backward(c.x_in.data(), w + L.norm1, c.rstd1.data(), dh1.data(), dtmp.data(), g + L.norm1, T, D);
    be.add(dtmp.data(), st.dx.data(), (std::int64_t)TD);  // st.dx: gradient at x_in
  }
  c = LayerCache{};
}

void Model::embed_backward(MicrobatchState& st) {
  Backend& be = backend(st);
  if (!params_.has_embedding()) throw Error("embedding is not held by this model shard");
  be.embedding_backward(st.batch.inputs.data(), st.dx.data(), params_.grads.data() + params_.embed_offset(), st.T, cfg_.d_model);
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

double Model::join_router_losses(const std::vector<MicrobatchState*>& shards) const {
  double aux_sum = 0.0;
  std::vector<const Routing*> parts(shards.size());
  for (int l = 0; l < cfg_.n_layers; ++l) {
    int T = 0;
    std::vector<std::int32_t> counts((std::size_t)cfg_.n_experts, 0);
    for (std::size_t i = 0; i < shards.size(); ++i) {
      const LayerCache& c = shards[i]->layer(l);
      if (!c.filled) throw Error("join_router_losses before every shard's forward");
      parts[i] = &c.routing;
      T += c.routing.T;
      for (int e = 0; e < cfg_.n_experts; ++e) counts[(std::size_t)e] += c.routing.offsets[e + 1] - c.routing.offsets[e];
    }
    for (MicrobatchState* st : shards) {
      Routing& r = st->layer(l).routing;
      r.batch_T = T;
      r.batch_counts = counts;
    }
    double aux = 0.0, z = 0.0;
    moe_router_losses(parts, cfg_.aux_loss_coef, cfg_.z_loss_coef, aux, z);
    aux_sum += aux + z;  // in layer order, as fwd_combine adds them
  }
  return aux_sum;
}

void Model::add_weight_piece(int piece, const MicrobatchState& st, Backend& be) {
  if (piece < 0 || piece >= weight_piece_count()) throw Error("add_weight_piece: no such piece");
  float* g = params_.grads.data();
  const int D = cfg_.d_model, T = st.T;
  // A norm gain's gradient: the backward's own call again, the gain's half alone.
  auto norm_gain = [&](std::int64_t offset, const float* x, const float* rstd, const float* dy) {
    if (!st.shard || !dy) throw Error("add_weight_piece: the norm's gradient was not kept");
    be.rmsnorm_backward(x, nullptr, rstd, dy, nullptr, g + offset, T, D);
  };
  if (piece == kHeadPiece) {
    if (st.dlogits_head.empty()) throw Error("add_weight_piece: the head's gradient was not kept");
    be.matmul(st.h_f.data(), st.dlogits_head.data(), g + params_.head_offset(), D, T, cfg_.vocab, true, false, true);
    return;
  }
  if (piece == kFinalNormPiece)
    return norm_gain(params_.final_norm_offset(), st.x_final.data(), st.rstd_f.data(),
                     st.dh_final.empty() ? nullptr : st.dh_final.data());
  if (piece == kEmbedPiece) {
    if (st.dx.empty()) throw Error("add_weight_piece: the embedding's gradient was not kept");
    be.embedding_backward(st.batch.inputs.data(), st.dx.data(), g + params_.embed_offset(), T, D);
    return;
  }
  const int per = 5 + cfg_.n_experts, l = (piece - kEmbedPiece - 1) / per, p = (piece - kEmbedPiece - 1) % per;
  check_layer(l);
  const auto& L = params_.layer_layout();
  const LayerCache& c = st.layer(l);
  if (!c.weight_pending) throw Error("add_weight_piece before layer_backward_input");
  const std::int64_t base = params_.layer_offset(l);
  float* gl = g + base;
  const MoeGrads mg{gl + L.router, gl + L.experts, (long)L.expert_stride};
  if (p == 0)
    be.matmul(c.h1.data(), c.dqkv.data(), gl + L.wqkv, D, T, 3 * D, true, false, true);  // dWqkv += h1^T dqkv
  else if (p == 1)
    be.matmul(c.att.data(), c.dx_mid.data(), gl + L.wo, D, T, D, true, false, true);  // dWo += att^T dx
  else if (p == 2)
    moe_route_backward_weight(be, moe_shape(T), c.h2.data(), c.dlogits.data(), mg);
  else if (p == 3)
    norm_gain(base + L.norm1, c.x_in.data(), c.rstd1.data(), c.dh1.empty() ? nullptr : c.dh1.data());
  else if (p == 4)
    norm_gain(base + L.norm2, c.x_mid.data(), c.rstd2.data(), c.dh2.empty() ? nullptr : c.dh2.data());
  else
    moe_expert_backward_weight(be, moe_shape(T), c.routing, c.experts, c.dy.data(), c.du.data(), mg, p - 5);
}

void Model::forward(MicrobatchState& st, const Batch& b) {
  begin(st, b);
  embed_forward(st);
  for (int l = 0; l < cfg_.n_layers; ++l) layer_forward(l, st);
  head_forward(st, false, {});
}

}  // namespace onegpu::trainer
