#pragma once
// The forward and backward of a training step on the CPU, on every thread of a pool: each
// microbatch's texts are split among worker threads (SplitMicrobatch), each worker running its
// texts on a backend of its own. The gradients and losses are bit for bit those of one thread
// (split_microbatch.h says why), so the thread count changes the speed only. Trainer::step and
// bench/train both run it.
#include <memory>
#include <vector>

#include "trainer/memory/tracker.h"
#include "trainer/model/model.h"
#include "trainer/model/split_microbatch.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/ops/thread_pool.h"
#include "trainer/train/shared_widening.h"

namespace onegpu::trainer {

class SplitStep {
 public:
  // pool: the threads to use (null: one). A microbatch of `texts` texts is split among at most
  // that many workers. The model, tracker and pool must outlive this.
  SplitStep(Model& m, MemoryTracker& mt, ThreadPool* pool, int texts);
  int workers() const { return split_.workers(); }

  struct Losses {
    double ce_sum = 0.0;   // summed cross-entropy of every microbatch, added in microbatch order
    double aux_sum = 0.0;  // router losses of every microbatch, added in microbatch order
  };
  // Forward and backward of `batch` cut into `microbatches` microbatches of `texts` texts each,
  // adding their gradients to the model's (the caller zeroes them first).
  Losses forward_backward(const Batch& batch, int microbatches, const LossScales& sc);

 private:
  Model& m_;
  ThreadPool* pool_;
  int texts_;
  std::vector<std::unique_ptr<CpuBackend>> backends_;  // one a worker
  SplitMicrobatch split_;
  std::unique_ptr<SharedWidening> widening_;  // several workers: the weights they all read
};

}  // namespace onegpu::trainer
