#pragma once
// The forward and backward of a training step on the CPU, on every thread of a pool. Each
// microbatch's texts are cut into a fixed number of shards (kShards, fewer only when the
// microbatch has fewer texts), whatever the thread count, and a step runs in three phases:
// - every shard runs the forward of its texts on a backend of its own, shards at once;
// - the router losses, which average over the whole microbatch, are joined
//   (Model::join_router_losses);
// - every shard runs its backward without the weight gradients (Model::layer_backward_input),
//   shards at once; the norm gains' gradients go into the shard's own buffer;
// - the weight gradients, in pieces (Model::add_weight_piece: the head, the embedding, and per
//   block its attention weights, router and each expert), are shared out among the threads,
//   and each piece adds shard 0's rows and then shard 1's to the model's gradients; then the
//   shards' norm gains are added in shard order.
// Every sum therefore runs in an order that depends on the shards, never on the threads: 1, 2
// or 3 threads give the same bits, and two threads run two shards, then two pieces, at once
// without waiting on each other. Trainer::step, StepRunner's pieces on the CPU and bench/train
// all run it.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "trainer/memory/tracker.h"
#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/ops/thread_pool.h"

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
  int workers() const { return std::min(threads_, shards()); }

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
  // After the microbatch's last piece: the shards' norm gains added to the model's, in shard
  // order, and every shard's activations freed.
  void finish_microbatch();

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  void run_on_workers(int n, const std::function<void(int)>& f);
  Model& m_;
  ThreadPool* pool_;
  int threads_;
  int texts_;
  std::vector<std::unique_ptr<CpuBackend>> backends_;  // one a shard or a thread, the more
  std::vector<MicrobatchState> states_;                // one a shard
  // Shards 1.. write their norm gains' gradients here (shard 0 into the model's): a model's
  // layout from calloc, of which only the norms' pages are ever touched. Host memory outside
  // the tracker; zero between microbatches.
  std::vector<std::unique_ptr<float, Free>> norm_grads_;
  std::vector<std::pair<std::int64_t, std::int64_t>> norms_;  // offset and length of each gain
};

}  // namespace onegpu::trainer
