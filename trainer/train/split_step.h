#pragma once
// The forward and backward of a training step on the CPU, on every thread of a pool. Each
// microbatch's texts are cut into a fixed number of shards (kShards, fewer only when the
// microbatch has fewer texts), whatever the thread count, and a microbatch runs in four phases:
// - every shard runs the forward of its texts on a backend of its own, shards at once;
// - the router losses, which average over the whole microbatch, are joined
//   (Model::join_router_losses);
// - every shard runs its backward without the weight gradients (Model::layer_backward_input),
//   shards at once;
// - the weight gradients, in pieces (Model::add_weight_piece: the head, the embedding, and per
//   block its attention weights, router, norm gains and each expert), are shared out among
//   the threads, and each piece adds shard 0's rows and then shard 1's to the model's
//   gradients, with the ops that add rows in order onto what is there.
// So every gradient and loss is bit for bit that of the whole microbatch on one thread
// (Model::forward_backward), which forward_backward runs when it has one thread. StepRunner's
// pieces on the CPU run those four phases as they stand.
//
// forward_backward on two threads runs the backward of two parts at once instead (run_two):
// each thread runs one part's backward input, and both claim the weight pieces as both
// backwards pass them, each piece adding the first part's rows and then the second's: the same
// bits again, and no thread waits for a whole part of the other's. (It used to run the first
// part whole, weight gradients and all, with the second's pieces after it; the thread with the
// whole part then set the pace, slower whenever it drew the slower core.) With two or more
// microbatches left the parts are two whole microbatches (run_pair: nothing is cut, and
// cutting costs each shard its own widening of the weights and half-height matmuls); else they
// are the microbatch's two shards, after their forward and join. The modelled device runs
// microbatches one after the other, so a pair's second microbatch's activations are charged to
// a tracker of their own (MemoryTracker::StandIn) and the memory picture is one microbatch's
// (with what the first keeps for its weight pieces: a few per cent more).
// Trainer::step and bench/train run forward_backward.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "trainer/memory/tracker.h"
#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/ops/thread_pool.h"

namespace onegpu::trainer {

class SplitStep {
 public:
  // Two shards: as many as this machine's cores; more would cut the matmuls smaller for threads
  // that are not there. Any count gives the same numbers.
  static constexpr int kShards = 2;
  // pool: the threads to use (null: one). A microbatch has `texts` texts. The model, tracker
  // and pool must outlive this.
  SplitStep(Model& m, MemoryTracker& mt, ThreadPool* pool, int texts);
  int shards() const { return (int)states_.size(); }
  // Threads that run shards at once.
  int workers() const { return std::min(threads_, shards()); }
  // Where forward_backward's time goes (bench/train): wall seconds of each phase, and each
  // shard's own CPU seconds in the phases that run shards at once. When the shards truly run at
  // once, a phase's wall time is near its slowest shard's, not their sum; a shard's CPU time
  // against that of the shards on one thread (set_shards_on_one_thread) is what running beside
  // the other shard costs it.
  struct Timing {
    int microbatches = 0;
    double forward_s = 0, backward_s = 0, pieces_s = 0;  // wall: the shards' forward, backward input, pieces left after both
    double shard_forward_cpu_s[kShards] = {}, shard_backward_cpu_s[kShards] = {};
  };
  // Add forward_backward's times to *t (null: not timed).
  void set_timing(Timing* t) { timing_ = t; }
  // Run the shards (or a pair of microbatches) even on one thread, one after the other, instead
  // of the whole microbatch at once: the same bits; bench/train measures what cutting the
  // microbatch, or adding the weight pieces apart from the backward, costs by itself.
  void set_shards_on_one_thread(bool on) { shards_on_one_thread_ = on; }

  struct Losses {
    double ce_sum = 0.0;   // summed cross-entropy of every microbatch, added in microbatch order
    double aux_sum = 0.0;  // router losses of every microbatch, added in microbatch order
  };
  // Forward and backward of `batch` cut into `microbatches` microbatches of `texts` texts each,
  // adding their gradients to the model's (the caller zeroes them first).
  Losses forward_backward(const Batch& batch, int microbatches, const LossScales& sc);

  // ---- the same step a piece at a time (StepRunner); the same numbers ----
  // Microbatch `mb` (`texts` texts): each shard starts on its texts.
  void start(const Batch& mb);
  // f on every shard, shards on the pool's threads at once. If any throws, every shard is
  // released and the lowest shard's error is rethrown.
  void each(const std::function<void(MicrobatchState&)>& f);
  // Between a microbatch's forward and backward: its router losses (Model::join_router_losses).
  double join();
  // After the head: the microbatch's summed cross-entropy (shards added in order) and targets.
  double ce_sum() const;
  int n_targets() const;
  // Weight pieces [first, first + count) of every shard (Model::add_weight_piece), shared out
  // among the threads; each piece adds the shards' rows in shard order.
  void add_pieces(int first, int count);
  // After the microbatch's last piece: every shard's activations freed.
  void finish_microbatch();

 private:
  void run_on_workers(int n, const std::function<void(int)>& f);
  // Microbatches a and b at once, one a thread, each whole (forward_backward with two threads
  // and two microbatches left).
  void run_pair(const Batch& a, const Batch& b, const LossScales& sc, Losses& out);
  // first's and second's backward input, one a thread, then their weight pieces shared out,
  // each adding first's rows and then second's (pair: two microbatches, each run forward here
  // too, second charged beside_; else two shards of one, forward and join done). aux: a pair's.
  void run_two(MicrobatchState& first, MicrobatchState& second, bool pair, const LossScales& sc, double aux[2]);
  Model& m_;
  MemoryTracker& mt_;
  // The second microbatch of a pair: host memory of the simulation, not the device's
  // (MemoryTracker::StandIn). Before backends_: their scratch may be charged here.
  MemoryTracker beside_;
  ThreadPool* pool_;
  int threads_;
  int texts_;
  bool shards_on_one_thread_ = false;
  Timing* timing_ = nullptr;
  std::vector<std::unique_ptr<CpuBackend>> backends_;  // one a shard or a thread, the more; two at least (a pair)
  std::vector<MicrobatchState> states_;                // one a shard
  MicrobatchState whole_;  // forward_backward on one thread
  MicrobatchState pair_[2];  // run_pair
  // run_two's weight pieces in the order they become ready, and the progress each needs of both
  // parts: 1 the head done, 1 + n the backward through n blocks, 2 + L all of it.
  std::vector<int> piece_order_, piece_ready_;
};

}  // namespace onegpu::trainer
