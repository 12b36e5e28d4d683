#pragma once
// fp32 copies of one shard's bf16 weights, and the transposes of them that backward matmuls
// read, made once a step and shared by the ranks that hold that shard (the members of an expert
// group hold bitwise the same weights). Without it each rank widens its weights in every op of
// every microbatch and transposes them in every backward matmul: at 512 ranks that was a fifth
// of a step's CPU time.
//
// A copy is made the first time a range is read in a step, from the reader's own weights: a
// range is read only once it holds the step's values on every member (a first-step broadcast
// or a ZeRO-1 all-gather reaches all members of its group at once, before any of them reads),
// so it is the copy every member would have widened. invalidate() (at the start of every step,
// after the update) has the next read make it again; the arrays are kept for reuse.
//
// This is host memory of the simulation, not the modelled device's: the tracker is still
// charged the working copy each op would have made (Model::view), the transpose scratch too
// (CpuBackend::matmul), so the memory figures do not change. bytes() says what it costs.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "trainer/model/model.h"
#include "trainer/ops/cpu_backend.h"

namespace onegpu::trainer {

class WeightCache final : public WideWeights, public Transposes {
 public:
  const float* wide(const bf16* src, std::int64_t offset, std::int64_t n) override;
  // Only ranges of this cache's copies are known; other operands get null.
  const float* transposed(const float* b, int N, int K) override;
  void invalidate();          // the weights changed: copies are made again from the next read
  std::size_t bytes() const;  // host memory the copies hold

 private:
  struct Free {  // the arrays come from the host pool (tracker.h), made all at once in a first step
    std::size_t bytes;  // no initialiser: unique_ptr needs it default-constructible in here
    void operator()(float* p) const { give_host_block(p, bytes); }
  };
  using Array = std::unique_ptr<float[], Free>;
  static Array floats(std::int64_t n);
  struct Copy {
    std::int64_t offset = 0, n = 0;  // wide: the range of the store; transposed: N and K
    Array data;
    std::uint64_t made = 0;  // the generation it was made in
  };
  mutable std::mutex mu_;
  std::uint64_t generation_ = 1;
  std::vector<Copy> wide_;                             // a few ranges a shard: searched in order
  // By the operand's address, sorted: a few dozen a shard, looked up in every backward
  // matmul of every member (a hash map's nodes were cold cache misses at 512 ranks).
  struct Transposed {
    const float* of = nullptr;
    Copy copy;
  };
  std::vector<Transposed> transposed_;
};

}  // namespace onegpu::trainer
