#include "trainer/model/split_microbatch.h"

#include <thread>

#include "trainer/error.h"

#include "trainer/ops/cpu_pause.h"

namespace onegpu::trainer {

namespace {
constexpr int kShareSpin = 1000;  // pause iterations (about 25 us) before sleeping: most waits are short
constexpr int kAborted = 1 << 28;  // added to every counter on abort, past any target
}  // namespace

SplitMicrobatch::SplitMicrobatch(int workers, int n_layers)
    : workers_(workers), n_layers_(n_layers), states_((std::size_t)workers), sites_(kLayerSites + 3 * n_layers) {
  if (workers < 1) throw Error("split microbatch: at least one worker");
  turns_ = std::make_unique<std::atomic<int>[]>((std::size_t)sites_);
  reset(1);
}

void SplitMicrobatch::reset(int rounds) {
  for (int i = 0; i < sites_; ++i) turns_[i].store(0, std::memory_order_relaxed);
  met_.store(0, std::memory_order_relaxed);
  if (rounds > block_rounds_) {
    const std::size_t n = (std::size_t)rounds * n_layers_;
    inputs_ = std::make_unique<std::atomic<int>[]>(n);
    claims_ = std::make_unique<std::atomic<int>[]>(n);
    done_ = std::make_unique<std::atomic<int>[]>(n);
    block_rounds_ = rounds;
  }
  for (std::size_t i = 0; i < (std::size_t)block_rounds_ * n_layers_; ++i) {
    inputs_[i].store(0, std::memory_order_relaxed);
    claims_[i].store(0, std::memory_order_relaxed);
    done_[i].store(0, std::memory_order_relaxed);
  }
  aborted_.store(false, std::memory_order_relaxed);
  ce_.assign((std::size_t)rounds, 0.0);
  router_.assign((std::size_t)rounds * n_layers_, 0.0);
}

double SplitMicrobatch::aux_sum(int round) const {
  double s = 0.0;  // block order, as fwd_combine adds them
  for (int l = 0; l < n_layers_; ++l) s += router_[(std::size_t)round * n_layers_ + l];
  return s;
}

void SplitMicrobatch::wait_until(std::atomic<int>& a, int target) {
  int v = a.load(std::memory_order_acquire);
  for (int s = 0; v < target && s < kShareSpin; ++s) {
    cpu_pause();
    v = a.load(std::memory_order_acquire);
  }
  while (v < target) {
    a.wait(v, std::memory_order_acquire);
    v = a.load(std::memory_order_acquire);
  }
  if (aborted_.load(std::memory_order_acquire)) throw Error("split microbatch: another worker failed");
}

void SplitMicrobatch::take_turn(int site, int round, int worker) {
  wait_until(turns_[site], round * workers_ + worker);
}

void SplitMicrobatch::end_turn(int site) {
  turns_[site].fetch_add(1, std::memory_order_acq_rel);
  if (workers_ > 1) turns_[site].notify_all();
}

void SplitMicrobatch::meet(int round, int k) {
  met_.fetch_add(1, std::memory_order_acq_rel);
  if (workers_ > 1) met_.notify_all();
  wait_until(met_, (2 * round + k + 1) * workers_);
}

void SplitMicrobatch::input_done(int round, int l) {
  std::atomic<int>& a = at(inputs_, round, l);
  a.fetch_add(1, std::memory_order_acq_rel);
  if (workers_ > 1) a.notify_all();
}

void SplitMicrobatch::wait_inputs(int round, int l) { wait_until(at(inputs_, round, l), workers_); }

int SplitMicrobatch::claim(int round, int l, int pieces) {
  const int p = at(claims_, round, l).fetch_add(1, std::memory_order_acq_rel);
  if (aborted_.load(std::memory_order_acquire)) throw Error("split microbatch: another worker failed");
  return p < pieces ? p : -1;
}

void SplitMicrobatch::piece_done(int round, int l) {
  std::atomic<int>& a = at(done_, round, l);
  a.fetch_add(1, std::memory_order_acq_rel);
  if (workers_ > 1) a.notify_all();
}

bool SplitMicrobatch::pieces_done(int round, int l, int pieces) const {
  // Never after an abort: the counters are then past any target, and others may still read.
  // (abort adds to the counters after setting aborted_: read the counter first.)
  const int done = at(done_, round, l).load(std::memory_order_acquire);
  return done >= pieces && !aborted_.load(std::memory_order_acquire);
}

void SplitMicrobatch::wait_pieces(int round, int l, int pieces) { wait_until(at(done_, round, l), pieces); }

void SplitMicrobatch::abort() {
  aborted_.store(true, std::memory_order_release);
  for (std::size_t i = 0; i < (std::size_t)block_rounds_ * n_layers_; ++i)
    for (auto* a : {&inputs_[i], &done_[i]}) {
      a->fetch_add(kAborted, std::memory_order_acq_rel);
      a->notify_all();
    }
  for (int i = 0; i < sites_; ++i) {
    turns_[i].fetch_add(kAborted, std::memory_order_acq_rel);
    turns_[i].notify_all();
  }
  met_.fetch_add(kAborted, std::memory_order_acq_rel);
  met_.notify_all();
}

}  // namespace onegpu::trainer
