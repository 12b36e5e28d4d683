#pragma once
// The weights a CPU step's shards read (SplitStep), made once a step: every bf16 weight widened
// to fp32, in chunks over the threads before the step, and the transposes of them that backward
// matmuls read, each made by the first shard that asks. Without it every shard widens each
// block in its forward and again in its backward, and transposes each weight in every backward
// matmul: with two shards twice the work of one whole microbatch. The values are exact copies,
// so the numbers are those of the ops making them themselves.
//
// Host memory of the simulation, not the modelled device's: the tracker is still charged the
// working copy each op would have made (Model::view) and the transpose scratch
// (CpuBackend::matmul), so the memory figures do not change.
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"
#include "trainer/ops/thread_pool.h"

namespace onegpu::trainer {

class StepWeights final : public WideWeights, public Transposes {
 public:
  // Widen `store`'s weights (the model's, unchanged until the next refresh) on `pool`'s threads
  // (null: this one); transposes made before are dropped.
  void refresh(const ParamStore& store, ThreadPool* pool);
  const float* wide(const bf16* src, std::int64_t offset, std::int64_t n) override;
  // Only operands inside the widened copy are known; others get null.
  const float* transposed(const float* b, int N, int K) override;

 private:
  struct Transpose {
    int N = 0, K = 0;
    std::vector<float> data;  // kept from step to step: made again, not allocated again
    std::mutex mu;            // the first reader of a step makes it; a second waits
    std::uint64_t made = 0;   // the refresh it was made after
  };
  std::vector<float> wide_;
  std::uint64_t generation_ = 0;
  std::mutex mu_;  // guards the map; each entry is made under its own lock
  std::unordered_map<const float*, std::unique_ptr<Transpose>> transposed_;
};

}  // namespace onegpu::trainer
