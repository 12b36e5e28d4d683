#pragma once
// The seam between the model and the hardware. The model calls only these ops; the CPU backend
// is the reference and a CUDA backend implements the same interface on device pointers.
// Layout conventions: row-major; activations are [T, D] with T = batch * seq tokens; weights of a
// linear layer are [in, out], so y = x · W.
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <functional>
#include <string_view>

namespace onegpu::trainer {

// The per-step numbers of an AdamW update (trainer/optim/adamw.cpp computes them once a step).
struct AdamWStep {
  float scale = 1.f;               // gradient clip factor
  float b1 = 0.f, b2 = 0.f;        // moment decay rates
  float inv_bc1 = 1.f, inv_bc2 = 1.f;  // 1 / bias corrections
  float lr = 0.f, eps = 0.f;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual int threads() const = 0;

  // C[M,N] (+)= op(A) · op(B), op(A) is [M,K], op(B) is [K,N].
  // transA: A is stored [K,M]; transB: B is stored [N,K]. accumulate: add into C.
  virtual void matmul(const float* A, const float* B, float* C, int M, int K, int N, bool transA,
                      bool transB, bool accumulate) = 0;

  // y = x / rms(x) * g per row; rstd[t] = 1/rms saved for backward.
  virtual void rmsnorm_forward(const float* x, const float* g, float* y, float* rstd, int T, int D,
                               float eps) = 0;
  // dx = ... (overwritten); dg += ... (accumulated). Either may be null: that half is skipped
  // (g is read only for dx). A shard of a microbatch wants dx now and dg later (split_step.h).
  virtual void rmsnorm_backward(const float* x, const float* g, const float* rstd, const float* dy,
                                float* dx, float* dg, int T, int D) = 0;

  // Rotary positions on the q and k parts of a packed qkv [T, 3*H*dh] buffer, in place.
  // Token t has position t % S. inverse=true applies the transpose (for backward).
  virtual void rope(float* qkv, int T, int S, int H, int dh, bool inverse) = 0;

  // Causal attention per sequence (B sequences of S tokens) and head. qkv [T, 3*H*dh] (q|k|v),
  // out [T, H*dh], probs [B, H, S, S] saved for backward.
  virtual void attention_forward(const float* qkv, float* out, float* probs, int B, int S, int H,
                                 int dh) = 0;
  // dqkv overwritten.
  virtual void attention_backward(const float* qkv, const float* probs, const float* dout,
                                  float* dqkv, int B, int S, int H, int dh) = 0;

  virtual void softmax_rows(const float* x, float* y, int T, int N) = 0;

  // Expert activation: a = silu(u) = u * sigmoid(u).
  virtual void silu_forward(const float* u, float* a, std::int64_t n) = 0;
  virtual void silu_backward(const float* u, const float* da, float* du, std::int64_t n) = 0;

  // Mean-free cross-entropy: returns the summed loss over rows with target >= 0 and writes
  // dlogits = scale * (softmax - onehot) (zero rows for ignored targets). dlogits may be null.
  virtual double cross_entropy(const float* logits, const std::int32_t* targets, float* dlogits,
                               int T, int V, float scale) = 0;

  // out[t] = table[tok[t]]; dtable[tok[t]] += dout[t] (in token order: deterministic).
  virtual void embedding_forward(const float* table, const std::int32_t* tok, float* out, int T,
                                 int D) = 0;
  virtual void embedding_backward(const std::int32_t* tok, const float* dout, float* dtable, int T,
                                  int D) = 0;

  // dst[i] = src[idx[i]] (MoE dispatch).
  virtual void gather_rows(const float* src, const std::int32_t* idx, float* dst, int n, int D) = 0;
  // dst[idx[i]] += w[i] * src[i] (MoE combine), i in order.
  virtual void scatter_add_rows(const float* src, const std::int32_t* idx, const float* w,
                                float* dst, int n, int D) = 0;

  virtual void add(const float* a, float* y, std::int64_t n) = 0;  // y += a

  // Runs fn(i) for i in [0, n): independent tasks (e.g. one per expert) that write disjoint
  // outputs, possibly side by side; ops called inside a task run on one thread. The default
  // runs them in order.
  virtual void parallel_tasks(int n, const std::function<void(int)>& fn) {
    for (int i = 0; i < n; ++i) fn(i);
  }
  virtual void bf16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n) = 0;

  // ---- for backends whose ops run asynchronously on a device (trainer/cuda) ----
  // The CPU versions below are the plain host loops; the CPU backend does not override them.

  // Waits until every op issued so far has finished. The model calls it before host code reads
  // memory that ops wrote (MoE routing and its backward still run on the host).
  virtual void sync() {}
  virtual void copy(const float* src, float* dst, std::int64_t n) {  // dst = src
    if (n > 0) std::memcpy(dst, src, (std::size_t)n * sizeof(float));
  }
  virtual void zero(float* p, std::int64_t n) { std::fill(p, p + n, 0.f); }
  // Sum of x[i]^2 in double (the global gradient norm). Defined in optim/adamw.cpp.
  virtual double sum_squares(const float* x, std::int64_t n);
  // The fused AdamW step on n weights: moments m, v, fp32 master w and its bf16 copy wb, from
  // the gradient g; wd is the decoupled weight decay of this range. Defined in optim/adamw.cpp.
  virtual void adamw(const AdamWStep& s, float* w, float* m, float* v, const float* g, std::uint16_t* wb,
                     std::int64_t n, float wd);
  // MoE combine, backward, over n dispatched rows [n, D] in expert-major order: row r holds
  // slot order[r] of token token_of_row[r]; dy[r] = gate[slot] * dout[token] and
  // dgate[slot] = dout[token] . y[r]. Defined in model/moe.cpp.
  virtual void combine_backward(const float* y, const float* dout, const std::int32_t* order,
                                const std::int32_t* token_of_row, const float* gate, float* dy, float* dgate,
                                int n, int D);
  // MoE dispatch, backward: dh[t] += dxe[row_of_slot[t*k + j]] for j = 0..k-1 in order, for
  // every token t of T. Defined in model/moe.cpp.
  virtual void dispatch_backward(const float* dxe, const std::int32_t* row_of_slot, float* dh, int T, int k, int D);

  // ---- for virtual ranks that share one device (trainer/parallel) ----
  // Each rank has its own backend (on a GPU: its own stream). Data handed from one rank to
  // another is copied on the device, ordered by `after`, with no host wait.

  // dst = src, bytes (bf16 weights travel too). On a GPU: cudaMemcpyAsync on this backend's stream.
  virtual void copy_bytes(const void* src, void* dst, std::size_t bytes) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }
  // Ops issued on this backend from now on run after every op issued so far on `other`. The
  // CPU's ops are done when they return: nothing to do.
  virtual void after(Backend& other) { (void)other; }

  // ---- op costs measured on the device, for the virtual clock (trainer/engine) ----
  // A backend whose ops only queue work (a GPU) times each engine op itself: mark_begin(key) and
  // mark_end(key) put a timestamp on its queue (a CUDA event pair), and marked_seconds(key) reads
  // the time between them once sync() has returned. The CPU's ops run while the engine's wall
  // clock watches, so it times nothing (timed_on_device() is false).
  virtual bool timed_on_device() const { return false; }
  virtual void mark_begin(std::uint32_t key) { (void)key; }
  virtual void mark_end(std::uint32_t key) { (void)key; }
  virtual double marked_seconds(std::uint32_t key) { (void)key; return 0.0; }
};

}  // namespace onegpu::trainer
