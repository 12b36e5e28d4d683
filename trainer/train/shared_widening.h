#pragma once
// The fp32 working copies of the weights for the workers of a split step (SplitStep): without
// it each worker widens every block's bf16 weights itself, in the forward and again in the
// backward, so that work does not shrink with more threads. Here the workers widen one share
// each of the same copy and wait for the others' shares before reading it.
//
// Every worker asks for the same ranges in the same order (they run the same pieces, and the
// weight-gradient pieces read no weights), so a worker's k-th request names the k-th copy.
// Copies go round a ring of kSlots buffers; at most two of a worker's copies are alive at once
// and every request waits for all workers, so a slot is free again when it comes round.
// The values are the bf16 weights widened exactly, as a worker would have made them; the tracker
// is still charged each worker's own copy (Model::view), so the memory figures do not change.
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "trainer/model/model.h"
#include "trainer/ops/backend.h"

namespace onegpu::trainer {

class SharedWidening final : public WideWeights {
 public:
  // largest: the most weights one request names. backends: one a worker, widening its share.
  SharedWidening(std::int64_t largest, std::vector<Backend*> backends);
  // Before a step: requests count from zero again.
  void reset();
  // Run by worker `w` (the calling thread's worker, set by SplitStep): requests from any other
  // thread get null (that caller widens for itself).
  static void set_worker(int w);
  const float* wide(const bf16* src, std::int64_t offset, std::int64_t n) override;
  // A worker failed: the others' waits end with an Error.
  void abort();

 private:
  static constexpr int kSlots = 4;
  struct Free {
    void operator()(float* p) const;
  };
  std::int64_t largest_;
  std::vector<Backend*> backends_;
  std::unique_ptr<float, Free> slots_[kSlots];
  std::atomic<int> done_[kSlots];   // shares written into each slot, all its uses so far
  std::vector<int> requests_;       // per worker: requests made this step
  std::atomic<bool> aborted_{false};
};

}  // namespace onegpu::trainer
