#include "trainer/train/split_step.h"

#include <algorithm>
#include <atomic>
#include <exception>

#include "trainer/error.h"

namespace onegpu::trainer {

namespace {
int worker_count(ThreadPool* pool, int texts) {
  if (texts < 1) throw Error("split step: a microbatch needs a text");
  return std::min(pool ? pool->threads() : 1, texts);
}
}  // namespace

SplitStep::SplitStep(Model& m, MemoryTracker& mt, ThreadPool* pool, int texts)
    : m_(m), pool_(pool), texts_(texts), split_(worker_count(pool, texts), m.config().n_layers) {
  for (int w = 0; w < split_.workers(); ++w) backends_.push_back(std::make_unique<CpuBackend>(mt, 1));
  if (split_.workers() > 1) {
    const ModelConfig& c = m.config();
    std::vector<Backend*> bs;
    for (auto& b : backends_) bs.push_back(b.get());
    const std::int64_t largest = std::max<std::int64_t>(m.params().layer_layout().size, (std::int64_t)c.vocab * c.d_model);
    widening_ = std::make_unique<SharedWidening>(largest, std::move(bs));
  }
}

SplitStep::Losses SplitStep::forward_backward(const Batch& batch, int microbatches, const LossScales& sc) {
  const int W = split_.workers(), S = batch.S;
  if (microbatches < 1 || batch.B != microbatches * texts_)
    throw Error("split step: the batch must hold " + std::to_string(texts_) + " texts a microbatch");
  if (W == 1) {  // one thread: the plain pass, microbatch after microbatch (no turns to take)
    Losses out;
    MicrobatchState& st = split_.state(0);
    st.backend = backends_[0].get();
    for (int r = 0; r < microbatches; ++r) {
      Batch mb;
      mb.B = texts_;
      mb.S = S;
      const long first = (long)r * texts_ * S, last = (long)(r + 1) * texts_ * S;
      mb.inputs.assign(batch.inputs.begin() + first, batch.inputs.begin() + last);
      mb.targets.assign(batch.targets.begin() + first, batch.targets.begin() + last);
      m_.forward_backward(st, mb, sc);
      out.ce_sum += st.ce_sum;
      out.aux_sum += st.aux_sum;
    }
    return out;
  }
  split_.reset(microbatches);
  widening_->reset();
  std::vector<std::exception_ptr> errors((std::size_t)W);
  std::atomic<int> first_failed{-1};  // the cause; later failures are others' waits ending
  auto worker = [&](int w) {
    SharedWidening::set_worker(w);
    try {
      // Worker w's texts of every microbatch: [w * texts / W, (w + 1) * texts / W).
      const int t0 = w * texts_ / W, t1 = (w + 1) * texts_ / W;
      Batch mine;
      mine.B = t1 - t0;
      mine.S = S;
      for (int r = 0; r < microbatches; ++r) {
        const long first = ((long)r * texts_ + t0) * S, last = ((long)r * texts_ + t1) * S;
        mine.inputs.assign(batch.inputs.begin() + first, batch.inputs.begin() + last);
        mine.targets.assign(batch.targets.begin() + first, batch.targets.begin() + last);
        m_.forward_backward_share(split_, w, r, mine, sc, *backends_[(std::size_t)w]);
      }
    } catch (...) {
      errors[(std::size_t)w] = std::current_exception();
      int none = -1;
      first_failed.compare_exchange_strong(none, w);
      split_.abort();
      widening_->abort();
    }
    SharedWidening::set_worker(-1);
  };
  // Every worker needs a thread of its own (they meet): the pool runs W chunks on W threads,
  // since no chunk can end before all have started.
  m_.set_wide_weights(widening_.get());
  pool_->parallel_for(W, worker);
  m_.set_wide_weights(nullptr);
  if (const int f = first_failed.load(); f >= 0) {
    for (int w = 0; w < W; ++w) Model::release(split_.state(w));
    std::rethrow_exception(errors[(std::size_t)f]);
  }
  Losses out;
  for (int r = 0; r < microbatches; ++r) {
    out.ce_sum += split_.ce_sum(r);
    out.aux_sum += split_.aux_sum(r);
  }
  return out;
}

}  // namespace onegpu::trainer
