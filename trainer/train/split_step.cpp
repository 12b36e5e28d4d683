#include "trainer/train/split_step.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include "trainer/error.h"

namespace onegpu::trainer {

namespace {
constexpr std::int64_t kChunk = 1 << 15;  // floats a task adds

}  // namespace

SplitStep::SplitStep(Model& m, MemoryTracker& mt, ThreadPool* pool, int texts) : m_(m), pool_(pool), texts_(texts) {
  if (texts < 1) throw Error("split step: a microbatch needs a text");
  const int K = std::min(kShards, texts);
  states_.resize((std::size_t)K);
  const std::int64_t n = m.params().count();
  for (int k = 0; k < K; ++k) {
    backends_.push_back(std::make_unique<CpuBackend>(mt, 1));
    states_[(std::size_t)k].backend = backends_.back().get();
    if (k > 0) {
      grads_.emplace_back((std::size_t)n, 0.f);
      states_[(std::size_t)k].grads = grads_.back().data();
    }
  }
}

int SplitStep::workers() const { return std::min(pool_ ? pool_->threads() : 1, shards()); }

void SplitStep::start(const Batch& mb) {
  if (mb.B != texts_) throw Error("split step: a microbatch holds " + std::to_string(texts_) + " texts");
  const int K = shards();
  dirty_ = true;
  for (int k = 0; k < K; ++k) {
    // Shard k's texts: [k * texts / K, (k + 1) * texts / K).
    const int t0 = k * texts_ / K, t1 = (k + 1) * texts_ / K;
    Batch mine;
    mine.B = t1 - t0;
    mine.S = mb.S;
    mine.inputs.assign(mb.inputs.begin() + (long)t0 * mb.S, mb.inputs.begin() + (long)t1 * mb.S);
    mine.targets.assign(mb.targets.begin() + (long)t0 * mb.S, mb.targets.begin() + (long)t1 * mb.S);
    try {
      m_.begin(states_[(std::size_t)k], mine);
    } catch (...) {
      for (auto& st : states_) Model::release(st);
      throw;
    }
  }
}

void SplitStep::each(const std::function<void(MicrobatchState&)>& f) {
  const int K = shards();
  std::vector<std::exception_ptr> errors((std::size_t)K);
  auto run = [&](int k) {
    try {
      f(states_[(std::size_t)k]);
    } catch (...) {
      errors[(std::size_t)k] = std::current_exception();
    }
  };
  if (pool_ && K > 1)
    pool_->parallel_for(K, run);
  else
    for (int k = 0; k < K; ++k) run(k);
  for (auto& e : errors)
    if (e) {
      for (auto& st : states_) Model::release(st);
      std::rethrow_exception(e);
    }
}

double SplitStep::join() {
  std::vector<MicrobatchState*> parts;
  for (auto& st : states_) parts.push_back(&st);
  return m_.join_router_losses(parts);
}

double SplitStep::ce_sum() const {
  double s = 0.0;
  for (const auto& st : states_) s += st.ce_sum;
  return s;
}

int SplitStep::n_targets() const {
  int n = 0;
  for (const auto& st : states_) n += st.n_targets;
  return n;
}

void SplitStep::reduce() {
  // grads += shard 1 + shard 2 + ..., each element in shard order; the shards' buffers are
  // cleared in the same pass, ready for the next step. Chunks split the elements over threads.
  float* g = m_.params().grads.data();
  const std::int64_t n = m_.params().count(), chunks = (n + kChunk - 1) / kChunk;
  auto add = [&](int c) {
    const std::int64_t a = c * kChunk, b = std::min(n, a + kChunk);
    for (auto& s : grads_) {
      float* p = s.data();
      for (std::int64_t i = a; i < b; ++i) g[i] += p[i];
      std::memset(p + a, 0, sizeof(float) * (std::size_t)(b - a));
    }
  };
  if (pool_)
    pool_->parallel_for((int)chunks, add);
  else
    for (int c = 0; c < (int)chunks; ++c) add(c);
}

void SplitStep::finish() {
  if (dirty_ && !grads_.empty()) reduce();
  dirty_ = false;
}

void SplitStep::clear() {
  if (dirty_)
    for (auto& s : grads_) std::fill(s.begin(), s.end(), 0.f);
  dirty_ = false;
}

SplitStep::Losses SplitStep::forward_backward(const Batch& batch, int microbatches, const LossScales& sc) {
  const int S = batch.S;
  if (microbatches < 1 || batch.B != microbatches * texts_)
    throw Error("split step: the batch must hold " + std::to_string(texts_) + " texts a microbatch");
  clear();
  // Every weight widened once, and each transpose made once, for all shards.
  weights_.refresh(m_.params(), pool_);
  struct Unset {
    SplitStep& s;
    ~Unset() {
      s.m_.set_wide_weights(nullptr);
      for (auto& be : s.backends_) be->set_transposes(nullptr);
    }
  } unset{*this};
  m_.set_wide_weights(&weights_);
  for (auto& be : backends_) be->set_transposes(&weights_);
  Losses out;
  const int L = m_.config().n_layers;
  for (int r = 0; r < microbatches; ++r) {
    Batch mb;
    mb.B = texts_;
    mb.S = S;
    const long first = (long)r * texts_ * S, last = (long)(r + 1) * texts_ * S;
    mb.inputs.assign(batch.inputs.begin() + first, batch.inputs.begin() + last);
    mb.targets.assign(batch.targets.begin() + first, batch.targets.begin() + last);
    start(mb);
    each([&](MicrobatchState& st) {
      m_.embed_forward(st);
      for (int l = 0; l < L; ++l) m_.layer_forward(l, st);
    });
    const double aux = join();
    each([&](MicrobatchState& st) {
      m_.head_forward(st, true, sc);
      for (int l = L - 1; l >= 0; --l) m_.layer_backward(l, st, sc);
      m_.embed_backward(st);
      Model::release(st);
    });
    out.ce_sum += ce_sum();
    out.aux_sum += aux;
  }
  finish();
  return out;
}

}  // namespace onegpu::trainer
