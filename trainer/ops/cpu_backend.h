#pragma once
// The reference backend: plain C++ loops, blocked so the compiler vectorises them. With a pool it
// splits work by output rows (matmul) or by (sequence, head) (attention); every output element is
// still computed by the same instructions in the same order, so results do not depend on the
// number of threads. One backend per rank: it keeps scratch, so one thread at a time calls it.
#include <functional>
#include <memory>
#include <vector>

#include "trainer/memory/tracker.h"
#include "trainer/ops/backend.h"
#include "trainer/ops/thread_pool.h"

namespace onegpu::trainer {

// Where matmul may find a transB operand already laid out as [K, N] (a split run's transposed
// weights, made once a step: trainer/parallel/weight_cache.h).
class Transposes {
 public:
  virtual ~Transposes() = default;
  // b, of shape [N, K], as [K, N]; null to have matmul transpose it.
  virtual const float* transposed(const float* b, int N, int K) = 0;
};

class CpuBackend final : public Backend {
 public:
  // tracker: where the backend's scratch (matmul transposes) is charged, as activations.
  // threads: 1 = no pool.
  explicit CpuBackend(MemoryTracker& tracker, int threads = 1);
  std::string_view name() const override { return "cpu"; }
  int threads() const override { return pool_ ? pool_->threads() : 1; }
  ThreadPool* pool() { return pool_.get(); }  // null on one thread

  void matmul(const float* A, const float* B, float* C, int M, int K, int N, bool transA,
              bool transB, bool accumulate) override;
  void rmsnorm_forward(const float* x, const float* g, float* y, float* rstd, int T, int D,
                       float eps) override;
  void rmsnorm_backward(const float* x, const float* g, const float* rstd, const float* dy,
                        float* dx, float* dg, int T, int D) override;
  void rope(float* qkv, int T, int S, int H, int dh, bool inverse) override;
  void attention_forward(const float* qkv, float* out, float* probs, int B, int S, int H,
                         int dh) override;
  void attention_backward(const float* qkv, const float* probs, const float* dout, float* dqkv,
                          int B, int S, int H, int dh) override;
  void softmax_rows(const float* x, float* y, int T, int N) override;
  void silu_forward(const float* u, float* a, std::int64_t n) override;
  void silu_backward(const float* u, const float* da, float* du, std::int64_t n) override;
  double cross_entropy(const float* logits, const std::int32_t* targets, float* dlogits, int T,
                       int V, float scale) override;
  void embedding_forward(const float* table, const std::int32_t* tok, float* out, int T,
                         int D) override;
  void embedding_backward(const std::int32_t* tok, const float* dout, float* dtable, int T,
                          int D) override;
  void gather_rows(const float* src, const std::int32_t* idx, float* dst, int n, int D) override;
  void scatter_add_rows(const float* src, const std::int32_t* idx, const float* w, float* dst,
                        int n, int D) override;
  void add(const float* a, float* y, std::int64_t n) override;
  void bf16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n) override;
  void parallel_tasks(int n, const std::function<void(int)>& fn) override;
  // matmul asks `t` for transB operands before transposing them itself (null: never asks).
  void set_transposes(Transposes* t) { transposes_ = t; }

 private:
  float* scratch(std::size_t n);
  void for_chunks(int n, int min_per_chunk, const std::function<void(int, int)>& fn);
  MemoryTracker& tracker_;
  std::unique_ptr<ThreadPool> pool_;
  Buffer<float> scratch_;
  std::vector<double> row_loss_;
  Transposes* transposes_ = nullptr;
};

// Rows per register tile of the matmul kernel; threads split rows at multiples of it.
inline constexpr int kMatmulRowTile = 6;

// The row-block kernel behind matmul, exposed for the benchmark: rows [m0, m1) of
// C = op(A) · B, where op(A)(m, k) = A[m * a_rs + k * a_ks] and B is [K, N] row-major.
void matmul_rows(const float* A, long a_rs, long a_ks, const float* B, float* C, int m0, int m1,
                 int K, int N, bool accumulate);

// t[k, n] = b[n, k] for b of shape [N, K]: the transpose matmul makes of a transB operand.
void transpose_matrix(const float* b, float* t, int N, int K);

}  // namespace onegpu::trainer
