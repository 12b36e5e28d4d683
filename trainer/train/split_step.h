#pragma once
// The forward and backward of a training step on the CPU, on every thread of a pool. Each
// microbatch's texts are cut into a fixed number of shards (kShards, fewer only when the
// microbatch has fewer texts), whatever the thread count: a shard runs the whole forward and
// backward of its texts on a backend of its own, without waiting for another, adding its
// gradients into a buffer of its own; at the end of the step the shards' buffers are added to
// the model's gradients in shard order. One thread runs the same shards one after another, so
// 1, 2 or 3 threads give the same bits, and two threads run two shards at once.
// The only meeting is once a microbatch, between its forward and its backward: the router's
// load-balancing and z losses average over the whole microbatch (Model::join_router_losses).
// Trainer::step, StepRunner's pieces on the CPU and bench/train all run it.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "trainer/memory/tracker.h"
#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/ops/thread_pool.h"
#include "trainer/train/step_weights.h"

namespace onegpu::trainer {

class SplitStep {
 public:
  // Two shards: as many as this machine's cores; more would cut the matmuls smaller for threads
  // that are not there. The step's numbers depend on it (the order the gradients are summed in).
  static constexpr int kShards = 2;
  // pool: the threads to use (null: one). A microbatch has `texts` texts. The model, tracker
  // and pool must outlive this.
  SplitStep(Model& m, MemoryTracker& mt, ThreadPool* pool, int texts);
  int shards() const { return (int)states_.size(); }
  // Threads that run shards at once.
  int workers() const;

  struct Losses {
    double ce_sum = 0.0;   // summed cross-entropy of every microbatch, added in microbatch order
    double aux_sum = 0.0;  // router losses of every microbatch, added in microbatch order
  };
  // Forward and backward of `batch` cut into `microbatches` microbatches of `texts` texts each,
  // adding their gradients to the model's (the caller zeroes them first).
  Losses forward_backward(const Batch& batch, int microbatches, const LossScales& sc);

  // ---- the same step a piece at a time (StepRunner); the same numbers ----
  // Before a step: the shards' gradients zero (they are unless a step stopped part way).
  void clear();
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
  // After the last microbatch: the shards' gradients added to the model's, in shard order.
  void finish();

 private:
  void reduce();
  Model& m_;
  ThreadPool* pool_;
  int texts_;
  std::vector<std::unique_ptr<CpuBackend>> backends_;  // one a shard
  std::vector<MicrobatchState> states_;                // one a shard
  // Shards 1.. add into these (shard 0 into the model's own gradients): fp32, one model's worth
  // each, outside the tracker like any host-side bookkeeping of the CPU's threads (the memory
  // figures stay those of one device running the step). All zero between steps.
  std::vector<std::vector<float>> grads_;
  bool dirty_ = false;  // grads_ may hold a step's partial sums (one that failed or stopped)
  StepWeights weights_;  // forward_backward's: fp32 weights and their transposes, once a step
};

}  // namespace onegpu::trainer
