#include "trainer/train/split_step.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <exception>
#include <optional>
#include <thread>

#include "trainer/error.h"
#include "trainer/ops/cpu_pause.h"

namespace onegpu::trainer {

namespace {
double wall_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
}  // namespace

SplitStep::SplitStep(Model& m, MemoryTracker& mt, ThreadPool* pool, int texts)
    : m_(m), mt_(mt), pool_(pool), threads_(pool ? pool->threads() : 1), texts_(texts) {
  if (texts < 1) throw Error("split step: a microbatch needs a text");
  const ModelConfig& c = m.config();
  const ParamStore& P = m.params();
  if (P.expert_count() != c.n_experts || !P.has_embedding() || !P.has_head())
    throw Error("split step: needs the whole model");
  const int K = std::min(kShards, texts);
  states_.resize((std::size_t)K);
  for (int b = 0; b < std::max({K, threads_, 2}); ++b) backends_.push_back(std::make_unique<CpuBackend>(mt, 1));
  // run_two's weight pieces in the order a backward makes them ready: the head's, then block by
  // block down, the embedding's last.
  const int L = c.n_layers;
  auto add = [&](int piece, int progress) {
    piece_order_.push_back(piece);
    piece_ready_.push_back(progress);
  };
  add(Model::kHeadPiece, 1);
  add(Model::kFinalNormPiece, 1);
  for (int l = L - 1; l >= 0; --l)
    for (int p = m.first_weight_piece(l); p < m.first_weight_piece(l + 1); ++p) add(p, 1 + (L - l));
  add(Model::kEmbedPiece, 2 + L);
  if ((int)piece_order_.size() != m.weight_piece_count()) throw Error("split step: weight pieces not all ordered");
  for (int k = 0; k < K; ++k) {
    states_[(std::size_t)k].backend = backends_[(std::size_t)k].get();
    states_[(std::size_t)k].shard = true;  // the norm gains are weight pieces too
  }
}

void SplitStep::run_on_workers(int n, const std::function<void(int)>& f) {
  if (pool_ && n > 1)
    pool_->parallel_for(n, f);
  else
    for (int i = 0; i < n; ++i) f(i);
}

void SplitStep::start(const Batch& mb) {
  if (mb.B != texts_) throw Error("split step: a microbatch holds " + std::to_string(texts_) + " texts");
  const int K = shards();
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
  run_on_workers(K, [&](int k) {
    try {
      f(states_[(std::size_t)k]);
    } catch (...) {
      errors[(std::size_t)k] = std::current_exception();
    }
  });
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
  double s = 0.0;  // every row in order, as one call on the whole microbatch adds them
  for (const auto& st : states_)
    for (double r : st.row_ce) s += r;
  return s;
}

int SplitStep::n_targets() const {
  int n = 0;
  for (const auto& st : states_) n += st.n_targets;
  return n;
}

void SplitStep::add_pieces(int first, int count) {
  // Each worker claims the next piece nobody has; a piece is one worker's from start to end.
  const int W = std::min(threads_, count);
  std::atomic<int> next{0};
  std::vector<std::exception_ptr> errors((std::size_t)std::max(W, 1));
  run_on_workers(W, [&](int w) {
    try {
      for (int i; (i = next.fetch_add(1)) < count;)
        for (const auto& st : states_) m_.add_weight_piece(first + i, st, *backends_[(std::size_t)w]);
    } catch (...) {
      errors[(std::size_t)w] = std::current_exception();
      next.store(count);
    }
  });
  for (auto& e : errors)
    if (e) {
      for (auto& st : states_) Model::release(st);
      std::rethrow_exception(e);
    }
}

void SplitStep::finish_microbatch() {
  for (auto& st : states_) Model::release(st);
}

void SplitStep::run_pair(const Batch& a, const Batch& b, const LossScales& sc, Losses& out) {
  MicrobatchState* st[2] = {&pair_[0], &pair_[1]};
  try {
    for (int k = 0; k < 2; ++k) {
      st[k]->backend = backends_[(std::size_t)k].get();
      st[k]->shard = true;  // backward input only: the weight gradients come as pieces, a's rows first
      m_.begin(*st[k], k == 0 ? a : b);
    }
    double aux[2] = {0, 0};
    run_two(*st[0], *st[1], /*pair=*/true, sc, aux);
    for (int k = 0; k < 2; ++k) {
      double ce = 0.0;  // every row in order, as the whole microbatch on one thread adds them
      for (double v : st[k]->row_ce) ce += v;
      out.ce_sum += ce;
      out.aux_sum += aux[k];
    }
  } catch (...) {
    for (auto* s : st) Model::release(*s);
    throw;
  }
  for (auto* s : st) Model::release(*s);
}

void SplitStep::run_two(MicrobatchState& first, MicrobatchState& second, bool pair, const LossScales& sc,
                        double aux[2]) {
  const int L = m_.config().n_layers;
  MicrobatchState* st[2] = {&first, &second};
  // Each thread runs one part's backward input (a pair: its forward too). Then both claim the
  // weight pieces in the order they become ready (the head's, then block by block down, the
  // embedding's last): a piece is ready once both backwards have passed it, and whoever claims
  // it adds the first part's rows there and then the second's, as one thread adds them. Pieces
  // touch disjoint weights, so the two threads' pieces run at once, and neither thread waits on
  // a whole part of the other's: a thread on a slower core just claims fewer pieces.
  const int count = (int)piece_order_.size();
  const std::vector<int>& order = piece_order_;
  const std::vector<int>& ready = piece_ready_;
  std::atomic<int> progress[2] = {0, 0};  // as piece_ready_ counts
  std::atomic<bool> failed{false};
  std::atomic<int> next{0};
  std::exception_ptr errors[2];
  double done_at[2] = {0, 0};
  const double t0 = timing_ ? wall_now() : 0;
  // On one thread (set_shards_on_one_thread, for bench/train): the first part, then the second
  // and every piece.
  const bool together = threads_ >= 2 && !shards_on_one_thread_;
  auto body = [&](int k) {
    try {
      const double c0 = timing_ ? thread_cpu_now() : 0;
      MicrobatchState& s = *st[k];
      std::optional<MemoryTracker::StandIn> beside;
      // A pair's second microbatch: the device would run it after the first.
      if (pair && k == 1) beside.emplace(mt_, beside_);
      if (pair) {  // shards of one microbatch ran their forward before, and joined
        m_.embed_forward(s);
        for (int l = 0; l < L; ++l) m_.layer_forward(l, s);
        std::vector<MicrobatchState*> one{&s};
        aux[k] = m_.join_router_losses(one);
      }
      m_.head_forward(s, true, sc, /*defer_weight=*/true);
      progress[k].store(1, std::memory_order_release);
      for (int l = L - 1; l >= 0; --l) {
        m_.layer_backward_input(l, s, sc);
        progress[k].store(1 + (L - l), std::memory_order_release);
      }
      progress[k].store(2 + L, std::memory_order_release);
      beside.reset();  // the pieces' scratch is the device's, as on one thread
      if (timing_) {
        timing_->shard_backward_cpu_s[k] += thread_cpu_now() - c0;
        done_at[k] = wall_now();
      }
      if (!together && k == 0) return;
      for (int i; (i = next.fetch_add(1)) < count;) {
        const int need = ready[(std::size_t)i];
        for (int spins = 0; progress[0].load(std::memory_order_acquire) < need ||
                            progress[1].load(std::memory_order_acquire) < need;
             ++spins) {
          if (failed.load(std::memory_order_relaxed)) return;
          if (spins < 4096)
            cpu_pause();
          else
            std::this_thread::yield();
        }
        for (const MicrobatchState* part : st) m_.add_weight_piece(order[(std::size_t)i], *part, *backends_[(std::size_t)k]);
      }
    } catch (...) {
      errors[k] = std::current_exception();
      failed.store(true);
      next.store(count);
    }
  };
  if (together)
    run_on_workers(2, body);
  else
    for (int k = 0; k < 2 && !failed.load(); ++k) body(k);
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  if (timing_) {
    const double t1 = std::max(done_at[0], done_at[1]), t2 = wall_now();
    timing_->backward_s += t1 - t0;  // both parts' backward (the first's whole), and a pair's forward
    timing_->pieces_s += t2 - t1;    // the second part's pieces left once both are done
    timing_->microbatches += pair ? 2 : 1;
  }
}

SplitStep::Losses SplitStep::forward_backward(const Batch& batch, int microbatches, const LossScales& sc) {
  const int S = batch.S;
  if (microbatches < 1 || batch.B != microbatches * texts_)
    throw Error("split step: the batch must hold " + std::to_string(texts_) + " texts a microbatch");
  Losses out;
  const int L = m_.config().n_layers;
  auto microbatch = [&](int r) {
    Batch mb;
    mb.B = texts_;
    mb.S = S;
    const long first = (long)r * texts_ * S, last = (long)(r + 1) * texts_ * S;
    mb.inputs.assign(batch.inputs.begin() + first, batch.inputs.begin() + last);
    mb.targets.assign(batch.targets.begin() + first, batch.targets.begin() + last);
    return mb;
  };
  for (int r = 0; r < microbatches; ++r) {
    if ((threads_ >= 2 || shards_on_one_thread_) && microbatches - r >= 2) {
      // Two threads, two microbatches left: each thread takes a whole microbatch.
      const Batch a = microbatch(r), b = microbatch(r + 1);
      run_pair(a, b, sc, out);
      ++r;
      continue;
    }
    const Batch mb = microbatch(r);
    // One thread, or a microbatch of one text: the whole microbatch at once, the same bits.
    if (shards() == 1 || (workers() == 1 && !shards_on_one_thread_)) {
      whole_.backend = backends_[0].get();
      m_.forward_backward(whole_, mb, sc);
      out.ce_sum += whole_.ce_sum;
      out.aux_sum += whole_.aux_sum;
      continue;
    }
    // Two shards: their forward at once, joined; then their backward input at once, and the
    // weight pieces shared out as they become ready (run_two).
    start(mb);
    const double t0 = timing_ ? wall_now() : 0;
    each([&](MicrobatchState& st) {
      const double c0 = timing_ ? thread_cpu_now() : 0;
      m_.embed_forward(st);
      for (int l = 0; l < L; ++l) m_.layer_forward(l, st);
      if (timing_) timing_->shard_forward_cpu_s[&st - states_.data()] += thread_cpu_now() - c0;
    });
    if (timing_) timing_->forward_s += wall_now() - t0;
    double aux = 0.0;
    try {
      aux = join();
      double unused[2] = {0, 0};
      run_two(states_[0], states_[1], /*pair=*/false, sc, unused);
    } catch (...) {
      finish_microbatch();
      throw;
    }
    const double ce = ce_sum();  // the shards' rows from 0.0 in order, as on one thread
    finish_microbatch();
    out.ce_sum += ce;
    out.aux_sum += aux;
  }
  return out;
}

}  // namespace onegpu::trainer
