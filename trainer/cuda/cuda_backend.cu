// The CUDA backend (cuda_backend.h says what it does and does not do). Each kernel mirrors the
// CPU reference in trainer/ops/cpu_backend.cpp; the comment above it says where the order of
// additions differs (and so where results may differ in the last bits).
//
// Index of this file:
//   >>errors      error checks, launch sizes
//   >>reduce      block-wide sum and max in a fixed order
//   >>kernels     one kernel (or two) per op
//   >>cublas      cuBLAS, loaded at run time
//   >>memory      unified memory for the tracker
//   >>backend     the Backend on a stream (>>timing: CUDA events per engine op)
//   >>info        device name and peak for the benchmark
#include <cstdlib>
#include <utility>
#include <vector>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <new>
#include <string>
#include <unordered_map>

#include "trainer/cuda/cuda_backend.h"
#include "trainer/error.h"

namespace onegpu::trainer {
namespace {

// ---- >>errors ---------------------------------------------------------------------------------

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear a sticky launch error so the next message is about the next call
    throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
  }
}
void check_launch(const char* what) { check(cudaGetLastError(), what); }

constexpr int kThreads = 256;
// Blocks for a grid-stride loop over n items: enough to fill a large GPU, never zero.
unsigned blocks_for(std::int64_t n) {
  std::int64_t b = (n + kThreads - 1) / kThreads;
  return (unsigned)std::max<std::int64_t>(1, std::min<std::int64_t>(b, 65535 * 8));
}

// ---- >>reduce ---------------------------------------------------------------------------------
// Sums and maxima over a block: each warp folds its 32 values by shuffles, warp 0 folds the warp
// results. The order depends only on blockDim (a multiple of 32), so a result is repeatable.

template <class T>
__device__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}

// Every thread of the block must call it; every thread gets the result.
template <class T>
__device__ T block_sum(T v) {
  __shared__ T part[32];
  __shared__ T total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();  // a previous call may still be reading part[]
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < warps ? part[lane] : T(0);
    w = warp_sum(w);
    if (lane == 0) total = w;
  }
  __syncthreads();
  return total;
}

__device__ float block_max(float v) {
  __shared__ float part[32];
  __shared__ float total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < warps ? part[lane] : -INFINITY;
    w = warp_max(w);
    if (lane == 0) total = w;
  }
  __syncthreads();
  return total;
}

// ---- >>kernels --------------------------------------------------------------------------------
// Shapes as in backend.h: T tokens, D model width, S sequence length, H heads of dh, V vocab.
// The file builds with --fmad=false (trainer/CMakeLists.txt): like the CPU build, which does
// not contract a*b+c, so element-wise ops round as the CPU's do.

// One block per row t. The CPU sums x^2 left to right; here the block tree sums it.
__global__ void k_rmsnorm_forward(const float* x, const float* g, float* y, float* rstd, int D, float eps) {
  const long t = blockIdx.x;
  const float* xr = x + t * D;
  float ss = 0.f;
  for (int d = threadIdx.x; d < D; d += blockDim.x) ss += xr[d] * xr[d];
  ss = block_sum(ss);
  const float r = 1.f / sqrtf(ss / D + eps);
  if (threadIdx.x == 0) rstd[t] = r;
  float* yr = y + t * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) yr[d] = xr[d] * r * g[d];
}

// dx of row t (one block per row): dx = dy*g*r - x * (sum dy*g*x) * r^3 / D.
__global__ void k_rmsnorm_backward_dx(const float* x, const float* g, const float* rstd, const float* dy, float* dx,
                                      int D) {
  const long t = blockIdx.x;
  const float* xr = x + t * D;
  const float* dyr = dy + t * D;
  const float r = rstd[t];
  float dot = 0.f;
  for (int d = threadIdx.x; d < D; d += blockDim.x) dot += dyr[d] * g[d] * xr[d];
  dot = block_sum(dot);
  const float c = dot * r * r * r / D;
  float* dxr = dx + t * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) dxr[d] = dyr[d] * g[d] * r - xr[d] * c;
}

// dg[d] += sum_t dy*x*r in two fixed stages: partial sums over chunks of kDgRows rows (grid
// (column blocks, chunks)), then one thread per column adds the chunks in order. The CPU adds
// row by row into dg; the grouping differs, the result is still the same on every run.
constexpr int kDgRows = 64;
__global__ void k_rmsnorm_backward_dg_part(const float* x, const float* rstd, const float* dy, float* part, int T,
                                           int D) {
  const int d = blockIdx.x * blockDim.x + threadIdx.x;
  if (d >= D) return;
  const long t0 = (long)blockIdx.y * kDgRows, t1 = min((long)T, t0 + kDgRows);
  float acc = 0.f;
  for (long t = t0; t < t1; ++t) acc += dy[t * D + d] * x[t * D + d] * rstd[t];
  part[(long)blockIdx.y * D + d] = acc;
}
__global__ void k_rmsnorm_backward_dg_sum(const float* part, int chunks, float* dg, int D) {
  const int d = blockIdx.x * blockDim.x + threadIdx.x;
  if (d >= D) return;
  float acc = dg[d];
  for (int c = 0; c < chunks; ++c) acc += part[(long)c * D + d];
  dg[d] = acc;
}

// One thread per (token, q|k, head, pair). Angles in double, as the CPU's table.
__global__ void k_rope(float* qkv, int T, int S, int H, int dh, bool inverse) {
  const int half = dh / 2, D = H * dh;
  const std::int64_t n = (std::int64_t)T * 2 * H * half;
  for (std::int64_t q = blockIdx.x * (std::int64_t)blockDim.x + threadIdx.x; q < n;
       q += (std::int64_t)gridDim.x * blockDim.x) {
    const int i = (int)(q % half);
    const int h = (int)(q / half % H);
    const int part = (int)(q / ((std::int64_t)half * H) % 2);
    const long t = (long)(q / ((std::int64_t)half * H * 2));
    const int pos = (int)(t % S);
    const double theta = pos * pow(10000.0, -2.0 * i / dh);
    const float c = (float)cos(theta);
    const float s = inverse ? -(float)sin(theta) : (float)sin(theta);
    float* p = qkv + t * 3 * D + part * D + h * dh;
    const float a = p[i], b = p[i + half];
    p[i] = a * c - b * s;
    p[i + half] = a * s + b * c;
  }
}

// Row i of one (sequence, head): grid (S, B*H). Scores q_i.k_j for j <= i (over d in order, as
// the CPU), softmax with expf (the CPU uses its own polynomial exp: relative differences near
// 1e-7), probabilities written to probs (zero above the diagonal), then out_i = sum_j p_j v_j.
// Dynamic shared memory: dh floats (q_i scaled).
__global__ void k_attention_forward(const float* qkv, float* out, float* probs, int S, int H, int dh, float scale) {
  extern __shared__ float qs[];
  const int i = blockIdx.x, bh = blockIdx.y, b = bh / H, h = bh % H;
  const int D = H * dh;
  const long row = 3L * D;
  const float* base = qkv + (long)b * S * row;
  for (int d = threadIdx.x; d < dh; d += blockDim.x) qs[d] = base[i * row + h * dh + d] * scale;
  __syncthreads();
  float* p = probs + ((long)bh * S + i) * S;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j <= i; j += blockDim.x) {
    const float* k = base + j * row + D + h * dh;
    float s = 0.f;
    for (int d = 0; d < dh; ++d) s += qs[d] * k[d];
    p[j] = s;
    mx = fmaxf(mx, s);
  }
  mx = block_max(mx);
  float sum = 0.f;
  for (int j = threadIdx.x; j <= i; j += blockDim.x) {
    const float e = expf(p[j] - mx);
    p[j] = e;
    sum += e;
  }
  sum = block_sum(sum);
  const float inv = 1.f / sum;
  for (int j = threadIdx.x; j < S; j += blockDim.x) p[j] = j <= i ? p[j] * inv : 0.f;
  __syncthreads();  // the row of p is read whole below
  float* o = out + ((long)b * S + i) * D + h * dh;
  for (int d = threadIdx.x; d < dh; d += blockDim.x) {
    float acc = 0.f;
    for (int j = 0; j <= i; ++j) acc += p[j] * base[j * row + 2 * D + h * dh + d];
    o[d] = acc;
  }
}

// Backward, part 1, row i (grid (S, B*H)): dp_j = dout_i . v_j, ds_ij = p_ij (dp_j - sum p dp)
// * scale into dS, and dq_i = sum_j ds_ij k_j (j ascending, as the CPU).
__global__ void k_attention_backward_rows(const float* qkv, const float* probs, const float* dout, float* dS,
                                          float* dqkv, int S, int H, int dh, float scale) {
  extern __shared__ float go[];
  const int i = blockIdx.x, bh = blockIdx.y, b = bh / H, h = bh % H;
  const int D = H * dh;
  const long row = 3L * D;
  const float* base = qkv + (long)b * S * row;
  for (int d = threadIdx.x; d < dh; d += blockDim.x) go[d] = dout[((long)b * S + i) * D + h * dh + d];
  __syncthreads();
  const float* p = probs + ((long)bh * S + i) * S;
  float* ds = dS + ((long)bh * S + i) * S;
  float dot = 0.f;
  for (int j = threadIdx.x; j <= i; j += blockDim.x) {
    const float* v = base + j * row + 2 * D + h * dh;
    float s = 0.f;
    for (int d = 0; d < dh; ++d) s += go[d] * v[d];
    ds[j] = s;  // dp for now
    dot += s * p[j];
  }
  dot = block_sum(dot);
  for (int j = threadIdx.x; j <= i; j += blockDim.x) ds[j] = p[j] * (ds[j] - dot) * scale;
  __syncthreads();
  float* dq = dqkv + (long)b * S * row + i * row + h * dh;
  for (int d = threadIdx.x; d < dh; d += blockDim.x) {
    float acc = 0.f;
    for (int j = 0; j <= i; ++j) acc += ds[j] * base[j * row + D + h * dh + d];
    dq[d] = acc;
  }
}

// Backward, part 2, column j (grid (S, B*H)): dv_j = sum_{i>=j} p_ij dout_i and
// dk_j = sum_{i>=j} ds_ij q_i, i ascending (the CPU adds into dk_j, dv_j in the same order).
__global__ void k_attention_backward_cols(const float* qkv, const float* probs, const float* dout, const float* dS,
                                          float* dqkv, int S, int H, int dh) {
  const int j = blockIdx.x, bh = blockIdx.y, b = bh / H, h = bh % H;
  const int D = H * dh;
  const long row = 3L * D;
  const float* base = qkv + (long)b * S * row;
  const float* p = probs + (long)bh * S * S;
  const float* ds = dS + (long)bh * S * S;
  float* dk = dqkv + (long)b * S * row + j * row + D + h * dh;
  float* dv = dk + D;
  for (int d = threadIdx.x; d < dh; d += blockDim.x) {
    float ak = 0.f, av = 0.f;
    for (int i = j; i < S; ++i) {
      av += p[(long)i * S + j] * dout[((long)b * S + i) * D + h * dh + d];
      ak += ds[(long)i * S + j] * base[i * row + h * dh + d];
    }
    dk[d] = ak;
    dv[d] = av;
  }
}

// One block per row: y = exp(x - max) / sum (expf; the CPU uses std::exp).
__global__ void k_softmax_rows(const float* x, float* y, int N) {
  const long t = blockIdx.x;
  const float* xr = x + t * N;
  float* yr = y + t * N;
  float mx = -INFINITY;
  for (int n = threadIdx.x; n < N; n += blockDim.x) mx = fmaxf(mx, xr[n]);
  mx = block_max(mx);
  float sum = 0.f;
  for (int n = threadIdx.x; n < N; n += blockDim.x) {
    const float e = expf(xr[n] - mx);
    yr[n] = e;
    sum += e;
  }
  sum = block_sum(sum);
  const float inv = 1.f / sum;
  for (int n = threadIdx.x; n < N; n += blockDim.x) yr[n] *= inv;
}

#define GRID_STRIDE(i, n) \
  for (std::int64_t i = blockIdx.x * (std::int64_t)blockDim.x + threadIdx.x; i < (n); i += (std::int64_t)gridDim.x * blockDim.x)

__global__ void k_silu_forward(const float* u, float* a, std::int64_t n) {
  GRID_STRIDE(i, n) a[i] = u[i] / (1.f + expf(-u[i]));
}
__global__ void k_silu_backward(const float* u, const float* da, float* du, std::int64_t n) {
  GRID_STRIDE(i, n) {
    const float x = u[i], s = 1.f / (1.f + expf(-x));
    du[i] = da[i] * s * (1.f + x * (1.f - s));
  }
}

// One block per row. Ignored rows (target < 0, or >= V which the CPU refuses) give no loss and
// zero gradient. The sum of exponentials is in double, like the CPU's eight double lanes.
__global__ void k_cross_entropy(const float* logits, const std::int32_t* targets, float* dlogits, double* row_loss,
                                int V, float scale) {
  const long t = blockIdx.x;
  const int y = targets[t];
  const float* l = logits + t * V;
  float* dl = dlogits ? dlogits + t * V : nullptr;
  if (y < 0 || y >= V) {  // the same for every thread of the block
    if (dl)
      for (int v = threadIdx.x; v < V; v += blockDim.x) dl[v] = 0.f;
    if (threadIdx.x == 0) row_loss[t] = 0.0;
    return;
  }
  float mx = -INFINITY;
  for (int v = threadIdx.x; v < V; v += blockDim.x) mx = fmaxf(mx, l[v]);
  mx = block_max(mx);
  double s = 0.0;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    const float e = expf(l[v] - mx);
    if (dl) dl[v] = e;
    s += e;
  }
  s = block_sum(s);
  if (dl) {
    const float f = (float)(scale / s);
    for (int v = threadIdx.x; v < V; v += blockDim.x) dl[v] *= f;
    __syncthreads();  // the target's entry may belong to another thread
    if (threadIdx.x == 0) dl[y] -= scale;
  }
  if (threadIdx.x == 0) row_loss[t] = log(s) + mx - l[y];
}

// One block sums n doubles: thread r takes rows r, r + blockDim, ... then the block tree.
__global__ void k_sum_doubles(const double* x, int n, double* out) {
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
  s = block_sum(s);
  if (threadIdx.x == 0) *out = s;
}

__global__ void k_embedding_forward(const float* table, const std::int32_t* tok, float* out, int T, int D) {
  GRID_STRIDE(q, (std::int64_t)T * D) {
    const long t = q / D, d = q % D;
    out[q] = table[(long)tok[t] * D + d];
  }
}

// dtable[tok[t]] += dout[t], t in order. Grid (column blocks, kRowGroups): a thread owns one
// column of the destination rows r with r % kRowGroups == blockIdx.y and walks all t in order,
// adding only for its rows. Every entry receives its additions in token order, exactly as on
// the CPU, and kRowGroups x more threads share the work than one thread per column would.
constexpr int kRowGroups = 32;
__global__ void k_embedding_backward(const std::int32_t* tok, const float* dout, float* dtable, int T, int D) {
  const int d = blockIdx.x * blockDim.x + threadIdx.x;
  if (d >= D) return;
  for (long t = 0; t < T; ++t) {
    const int r = tok[t];
    if (r % kRowGroups == (int)blockIdx.y) dtable[(long)r * D + d] += dout[t * D + d];
  }
}

__global__ void k_gather_rows(const float* src, const std::int32_t* idx, float* dst, int n, int D) {
  GRID_STRIDE(q, (std::int64_t)n * D) {
    const long i = q / D, d = q % D;
    dst[q] = src[(long)idx[i] * D + d];
  }
}

// dst[idx[i]] += w[i] * src[i], i in order (row groups as in embedding backward).
__global__ void k_scatter_add_rows(const float* src, const std::int32_t* idx, const float* w, float* dst, int n,
                                   int D) {
  const int d = blockIdx.x * blockDim.x + threadIdx.x;
  if (d >= D) return;
  for (long i = 0; i < n; ++i) {
    const int r = idx[i];
    if (r % kRowGroups != (int)blockIdx.y) continue;
    const float wi = w ? w[i] : 1.f;
    dst[(long)r * D + d] += wi * src[i * D + d];
  }
}

// MoE combine backward, one block per dispatched row: dy = gate * dout[token] and the gate's
// gradient dout[token] . y (block tree; the CPU sums d left to right).
__global__ void k_combine_backward(const float* y, const float* dout, const std::int32_t* order,
                                   const std::int32_t* token_of_row, const float* gate, float* dy, float* dgate, int D) {
  const long row = blockIdx.x;
  const int slot = order[row];
  const long t = token_of_row[row];
  const float g = gate[slot];
  const float* go = dout + t * D;
  const float* yr = y + row * D;
  float* dyr = dy + row * D;
  float dot = 0.f;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    dyr[d] = g * go[d];
    dot += go[d] * yr[d];
  }
  dot = block_sum(dot);
  if (threadIdx.x == 0) dgate[slot] = dot;
}

// MoE dispatch backward: dh[t] += the token's k rows, j in order (the CPU's order, exactly).
__global__ void k_dispatch_backward(const float* dxe, const std::int32_t* row_of_slot, float* dh, int T, int k, int D) {
  GRID_STRIDE(q, (std::int64_t)T * D) {
    const long t = q / D, d = q % D;
    float acc = dh[q];
    for (int j = 0; j < k; ++j) acc += dxe[(long)row_of_slot[t * k + j] * D + d];
    dh[q] = acc;
  }
}

__global__ void k_add(const float* a, float* y, std::int64_t n) {
  GRID_STRIDE(i, n) y[i] += a[i];
}

__global__ void k_bf16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n) {
  GRID_STRIDE(i, n) dst[i] = __uint_as_float((unsigned)src[i] << 16);
}

// Sum of squares in double: a fixed grid of partial sums, then one block adds them (fixed
// order for a given n). The CPU's order (eight lanes per 64k block) differs.
constexpr int kSumBlocks = 512;
__global__ void k_sum_squares_part(const float* x, std::int64_t n, double* part) {
  double s = 0.0;
  GRID_STRIDE(i, n) s += (double)x[i] * x[i];
  s = block_sum(s);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}

// The CPU's adamw_range, element by element; with --fmad=false and IEEE sqrt and division it
// rounds as the CPU does.
__global__ void k_adamw(float* w, float* m, float* v, const float* g, std::uint16_t* wb, std::int64_t n, float scale,
                        float b1, float b2, float inv_bc1, float inv_bc2, float lr, float wd, float eps) {
  GRID_STRIDE(i, n) {
    const float gi = g[i] * scale;
    const float mi = b1 * m[i] + (1.f - b1) * gi;
    const float vi = b2 * v[i] + (1.f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float den = sqrtf(vi * inv_bc2) + eps;
    const float wi = w[i] - lr * (mi * inv_bc1 / den + wd * w[i]);
    w[i] = wi;
    unsigned u = __float_as_uint(wi);
    u += 0x7fffu + ((u >> 16) & 1u);
    wb[i] = (std::uint16_t)(u >> 16);
  }
}

// x rounded to bf16 as float_to_bf16 (trainer/ops/bf16.h) rounds: to nearest even, NaN kept.
__global__ void k_round_bf16(const float* __restrict x, std::uint16_t* __restrict y, std::int64_t n) {
  GRID_STRIDE(i, n) {
    const unsigned u = __float_as_uint(x[i]);
    y[i] = (u & 0x7fffffffu) > 0x7f800000u ? (std::uint16_t)((u >> 16) | 0x40u)
                                           : (std::uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
}

// ---- >>cublas ---------------------------------------------------------------------------------
// Loaded with dlopen on first use, so no binary of the project needs libcublas to start.

struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  // The C entry point (the header also declares a C++ overload taking the older cudaDataType for
  // the compute type).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};

const Cublas& cublas() {
  static Cublas c = [] {
    Cublas r;
    const std::string major = std::to_string(CUBLAS_VER_MAJOR);
    void* lib = nullptr;
    for (std::string name : {"libcublas.so." + major, "/usr/local/cuda/lib64/libcublas.so." + major,
                             std::string("libcublas.so")}) {
      lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
    }
    if (!lib) throw Error("CUDA: cannot load libcublas.so." + major + " (is the CUDA toolkit's lib64 on the library path?)");
    auto sym = [&](const char* n) {
      void* s = dlsym(lib, n);
      if (!s) throw Error(std::string("CUDA: libcublas has no ") + n);
      return s;
    };
    r.create = reinterpret_cast<decltype(r.create)>(sym("cublasCreate_v2"));
    r.destroy = reinterpret_cast<decltype(r.destroy)>(sym("cublasDestroy_v2"));
    r.set_stream = reinterpret_cast<decltype(r.set_stream)>(sym("cublasSetStream_v2"));
    r.set_math_mode = reinterpret_cast<decltype(r.set_math_mode)>(sym("cublasSetMathMode"));
    r.sgemm = reinterpret_cast<decltype(r.sgemm)>(sym("cublasSgemm_v2"));
    r.gemm_ex = reinterpret_cast<decltype(r.gemm_ex)>(sym("cublasGemmEx"));
    return r;  // the library stays loaded for the life of the process
  }();
  return c;
}

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(std::string("cuBLAS: ") + what + " failed (status " + std::to_string((int)s) + ")");
}

// ---- >>memory ---------------------------------------------------------------------------------

class ManagedMemory final : public DeviceMemory {
 public:
  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    if (cudaMallocManaged(&p, bytes, cudaMemAttachGlobal) != cudaSuccess) {
      cudaGetLastError();
      throw std::bad_alloc();
    }
    // Pages live on the GPU; the host steps fault in what they read (routing is small).
    int dev = 0;
    cudaGetDevice(&dev);
    cudaMemLocation loc{};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = dev;
    cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, loc);
    cudaGetLastError();  // advice is optional: a system that refuses it still works
    return p;
  }
  // cudaFree waits for the device, so a kernel still reading the block finishes first.
  void release(void* p) override { cudaFree(p); }
  // A reused block may still be read by a queued kernel: the memset goes on the legacy stream
  // (ordered after the backend's blocking stream), and the host waits for it, since host code
  // may write the block next.
  void zero(void* p, std::size_t bytes) override {
    check(cudaMemset(p, 0, bytes), "memset");
    check(cudaDeviceSynchronize(), "memset");
  }
};

// ---- >>backend --------------------------------------------------------------------------------

class CudaBackend final : public Backend {
 public:
  CudaBackend(MemoryTracker& tracker, const CudaOptions& opt) : tracker_(tracker) {
    if (!tracker.on_device())
      throw Error("CUDA backend: the memory tracker must hand out device memory (use_device_memory) first");
    int n = 0;
    check(cudaGetDeviceCount(&n), "no usable CUDA device");
    if (opt.device < 0 || opt.device >= n) throw Error("CUDA backend: no device " + std::to_string(opt.device));
    check(cudaSetDevice(opt.device), "select device");
    device_ = opt.device;
    int concurrent = 0;
    cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, opt.device);
    if (!concurrent)
      throw Error("CUDA backend: this device or system lacks concurrent managed memory access, which the host "
                  "steps of the MoE layer need");
    check(cudaStreamCreate(&stream_), "create stream");  // blocking: ordered with the legacy stream
    check(cudaMallocHost(&host_result_, sizeof(double)), "pinned result");
    const Cublas& b = cublas();
    check_blas(b.create(&blas_), "create");
    check_blas(b.set_stream(blas_, stream_), "set stream");
    check_blas(b.set_math_mode(blas_, opt.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH), "math mode");
    tf32_ = opt.tf32;
    bf16_ = opt.bf16;
  }
  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
    for (auto& [name, e] : prof_) cudaEventDestroy(e);
    if (prof_origin_) cudaEventDestroy(prof_origin_);
    if (blas_) cublas().destroy(blas_);
    for (auto& s : stage_) cudaFree(s.p);
    cudaFreeHost(host_result_);
    for (auto& [key, t] : timers_) {
      cudaEventDestroy(t.begin);
      cudaEventDestroy(t.end);
    }
    cudaStreamDestroy(stream_);
  }

  std::string_view name() const override { return bf16_ ? "cuda-bf16" : tf32_ ? "cuda-tf32" : "cuda"; }
  int threads() const override { return 1; }

  void matmul(const float* A, const float* B, float* C, int M, int K, int N, bool transA, bool transB,
              bool accumulate) override {
    if (M <= 0 || N <= 0) return;
    if (transA && transB) throw Error("matmul: transA and transB together are not supported");
    if (K <= 0) {
      if (!accumulate) check(cudaMemsetAsync(C, 0, (std::size_t)M * N * sizeof(float), stream_), "matmul zero");
      return;
    }
    // Row-major C[M,N] = op(A) op(B) is column-major C^T[N,M] = op(B)^T op(A)^T: cuBLAS gets B
    // first. Row-major B [K,N] read column-major is B^T [N,K] with ld N (no transpose); stored
    // [N,K] (transB) it reads as [K,N] with ld K and needs one. The same for A.
    const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
    const cublasOperation_t opb = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opa = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ldb = transB ? K : N, lda = transA ? M : K;
    if (!bf16_) {
      check_blas(cublas().sgemm(blas_, opb, opa, N, M, K, &alpha, B, ldb, A, lda, &beta, C, N), "sgemm");
      done("matmul (cuBLAS)");
      return;
    }
    // Both inputs rounded to bf16 in the scratch, laid out as they were (same leading dimensions).
    const std::int64_t na = (std::int64_t)M * K, nb = (std::int64_t)K * N;
    std::uint16_t* a16 = reinterpret_cast<std::uint16_t*>(scratch((std::size_t)(na + nb + 1) / 2));
    std::uint16_t* b16 = a16 + na;
    k_round_bf16<<<blocks_for(na), kThreads, 0, stream_>>>(A, a16, na);
    k_round_bf16<<<blocks_for(nb), kThreads, 0, stream_>>>(B, b16, nb);
    done("matmul (inputs to bf16)");
    check_blas(cublas().gemm_ex(blas_, opb, opa, N, M, K, &alpha, b16, CUDA_R_16BF, ldb, a16, CUDA_R_16BF, lda, &beta, C,
                                CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "gemm (bf16)");
    done("matmul (cuBLAS, bf16)");
  }

  void rmsnorm_forward(const float* x, const float* g, float* y, float* rstd, int T, int D, float eps) override {
    if (T <= 0) return;
    k_rmsnorm_forward<<<T, row_threads(D), 0, stream_>>>(x, g, y, rstd, D, eps);
    done("rmsnorm_forward");
  }
  void rmsnorm_backward(const float* x, const float* g, const float* rstd, const float* dy, float* dx, float* dg,
                        int T, int D) override {
    if (T <= 0) return;
    if (dx) {
      k_rmsnorm_backward_dx<<<T, row_threads(D), 0, stream_>>>(x, g, rstd, dy, dx, D);
      done("rmsnorm_backward");
    }
    if (!dg) return;
    const int chunks = (T + kDgRows - 1) / kDgRows;
    if (dg_part_.size() < (std::size_t)chunks * D)
      dg_part_ = Buffer<float>(tracker_, MemCategory::Activations, (std::size_t)chunks * D, false);
    k_rmsnorm_backward_dg_part<<<dim3((D + 127) / 128, chunks), 128, 0, stream_>>>(x, rstd, dy, dg_part_.data(), T, D);
    done("rmsnorm_backward (gain parts)");
    k_rmsnorm_backward_dg_sum<<<(D + 127) / 128, 128, 0, stream_>>>(dg_part_.data(), chunks, dg, D);
    done("rmsnorm_backward (gain)");
  }
  void rope(float* qkv, int T, int S, int H, int dh, bool inverse) override {
    const std::int64_t n = (std::int64_t)T * 2 * H * (dh / 2);
    if (n <= 0) return;
    k_rope<<<blocks_for(n), kThreads, 0, stream_>>>(qkv, T, S, H, dh, inverse);
    done("rope");
  }
  void attention_forward(const float* qkv, float* out, float* probs, int B, int S, int H, int dh) override {
    if (B * H <= 0 || S <= 0) return;
    const float scale = 1.f / std::sqrt((float)dh);
    k_attention_forward<<<dim3(S, B * H), 128, dh * sizeof(float), stream_>>>(qkv, out, probs, S, H, dh, scale);
    done("attention_forward");
  }
  void attention_backward(const float* qkv, const float* probs, const float* dout, float* dqkv, int B, int S, int H,
                          int dh) override {
    if (B * H <= 0 || S <= 0) return;
    const float scale = 1.f / std::sqrt((float)dh);
    float* dS = scratch((std::size_t)B * H * S * S);
    k_attention_backward_rows<<<dim3(S, B * H), 128, dh * sizeof(float), stream_>>>(qkv, probs, dout, dS, dqkv, S, H,
                                                                                    dh, scale);
    done("attention_backward (rows)");
    const int cols = std::min(128, (dh + 31) / 32 * 32);
    k_attention_backward_cols<<<dim3(S, B * H), cols, 0, stream_>>>(qkv, probs, dout, dS, dqkv, S, H, dh);
    done("attention_backward (columns)");
  }
  void softmax_rows(const float* x, float* y, int T, int N) override {
    if (T <= 0) return;
    k_softmax_rows<<<T, row_threads(N), 0, stream_>>>(x, y, N);
    done("softmax_rows");
  }
  void silu_forward(const float* u, float* a, std::int64_t n) override {
    if (n <= 0) return;
    k_silu_forward<<<blocks_for(n), kThreads, 0, stream_>>>(u, a, n);
    done("silu_forward");
  }
  void silu_backward(const float* u, const float* da, float* du, std::int64_t n) override {
    if (n <= 0) return;
    k_silu_backward<<<blocks_for(n), kThreads, 0, stream_>>>(u, da, du, n);
    done("silu_backward");
  }
  double cross_entropy(const float* logits, const std::int32_t* targets, float* dlogits, int T, int V,
                       float scale) override {
    if (T <= 0) return 0.0;
    if (!is_device(targets))  // the CPU refuses such targets; a device array is checked by nobody
      for (int t = 0; t < T; ++t)
        if (targets[t] >= V) throw Error("cross_entropy: target outside the vocabulary");
    const std::int32_t* tg = on_device(targets, (std::size_t)T, 0);
    if (row_loss_.size() < (std::size_t)T + 1)
      row_loss_ = Buffer<double>(tracker_, MemCategory::Activations, (std::size_t)T + 1, false);
    k_cross_entropy<<<T, row_threads(V), 0, stream_>>>(logits, tg, dlogits, row_loss_.data(), V, scale);
    done("cross_entropy");
    k_sum_doubles<<<1, 1024, 0, stream_>>>(row_loss_.data(), T, row_loss_.data() + T);
    done("cross_entropy (sum)");
    return read_double(row_loss_.data() + T);  // the one number the API hands back
  }
  void embedding_forward(const float* table, const std::int32_t* tok, float* out, int T, int D) override {
    if (T <= 0) return;
    const std::int32_t* tk = on_device(tok, (std::size_t)T, 0);
    k_embedding_forward<<<blocks_for((std::int64_t)T * D), kThreads, 0, stream_>>>(table, tk, out, T, D);
    done("embedding_forward");
  }
  void embedding_backward(const std::int32_t* tok, const float* dout, float* dtable, int T, int D) override {
    if (T <= 0) return;
    const std::int32_t* tk = on_device(tok, (std::size_t)T, 0);
    k_embedding_backward<<<dim3((D + 127) / 128, kRowGroups), 128, 0, stream_>>>(tk, dout, dtable, T, D);
    done("embedding_backward");
  }
  void gather_rows(const float* src, const std::int32_t* idx, float* dst, int n, int D) override {
    if (n <= 0) return;
    const std::int32_t* ix = on_device(idx, (std::size_t)n, 0);
    k_gather_rows<<<blocks_for((std::int64_t)n * D), kThreads, 0, stream_>>>(src, ix, dst, n, D);
    done("gather_rows");
  }
  void scatter_add_rows(const float* src, const std::int32_t* idx, const float* w, float* dst, int n,
                        int D) override {
    if (n <= 0) return;
    const std::int32_t* ix = on_device(idx, (std::size_t)n, 0);
    const float* wd = w ? on_device(w, (std::size_t)n, 1) : nullptr;
    k_scatter_add_rows<<<dim3((D + 127) / 128, kRowGroups), 128, 0, stream_>>>(src, ix, wd, dst, n, D);
    done("scatter_add_rows");
  }
  void add(const float* a, float* y, std::int64_t n) override {
    if (n <= 0) return;
    k_add<<<blocks_for(n), kThreads, 0, stream_>>>(a, y, n);
    done("add");
  }
  void bf16_to_f32(const std::uint16_t* src, float* dst, std::int64_t n) override {
    if (n <= 0) return;
    k_bf16_to_f32<<<blocks_for(n), kThreads, 0, stream_>>>(src, dst, n);
    done("bf16_to_f32");
  }

  void combine_backward(const float* y, const float* dout, const std::int32_t* order, const std::int32_t* token_of_row,
                        const float* gate, float* dy, float* dgate, int n, int D) override {
    if (n <= 0) return;
    const std::int32_t* o = on_device(order, (std::size_t)n, 0);
    const std::int32_t* tr = on_device(token_of_row, (std::size_t)n, 1);
    const float* g = on_device(gate, (std::size_t)n, 2);  // gate is indexed by slot: also n entries
    k_combine_backward<<<n, row_threads(D), 0, stream_>>>(y, dout, o, tr, g, dy, dgate, D);
    done("combine_backward");
  }
  void dispatch_backward(const float* dxe, const std::int32_t* row_of_slot, float* dh, int T, int k, int D) override {
    if (T <= 0 || k <= 0) return;
    const std::int32_t* rs = on_device(row_of_slot, (std::size_t)T * k, 0);
    k_dispatch_backward<<<blocks_for((std::int64_t)T * D), kThreads, 0, stream_>>>(dxe, rs, dh, T, k, D);
    done("dispatch_backward");
  }

  void sync() override { check(cudaStreamSynchronize(stream_), "an earlier op failed"); }
  void copy_bytes(const void* src, void* dst, std::size_t bytes) override {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), "copy");
    done("copy");
  }
  // An event recorded on the other stream, waited for by ours: the device orders them, the
  // host goes on. The event may be destroyed at once (CUDA frees it once it has completed).
  void after(Backend& other) override {
    auto* o = dynamic_cast<CudaBackend*>(&other);
    if (!o || o == this) return;
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
    check(cudaEventRecord(e, o->stream_), "record an event");
    check(cudaStreamWaitEvent(stream_, e, 0), "wait for another stream");
    cudaEventDestroy(e);
  }

  // >>timing: one event pair per key (an engine op id), made on first use and kept for the
  // next steps (a plan's op ids repeat). Recording queues a timestamp: no host wait.
  bool timed_on_device() const override { return true; }
  void mark_begin(std::uint32_t key) override {
    // The engine's worker threads start on device 0: a rank on another GPU selects its own.
    check(cudaSetDevice(device_), "select device");
    check(cudaEventRecord(timer(key).begin, stream_), "record op start");
  }
  void mark_end(std::uint32_t key) override { check(cudaEventRecord(timer(key).end, stream_), "record op end"); }
  double marked_seconds(std::uint32_t key) override {
    auto it = timers_.find(key);
    if (it == timers_.end()) return 0.0;
    float ms = 0.f;
    if (cudaEventElapsedTime(&ms, it->second.begin, it->second.end) != cudaSuccess) {
      cudaGetLastError();  // never recorded, or not yet done: no cost rather than a wrong one
      return 0.0;
    }
    return ms * 1e-3;
  }
  void copy(const float* src, float* dst, std::int64_t n) override {
    if (n <= 0) return;
    check(cudaMemcpyAsync(dst, src, (std::size_t)n * sizeof(float), cudaMemcpyDefault, stream_), "copy");
    done("copy");
  }
  void zero(float* p, std::int64_t n) override {
    if (n <= 0) return;
    check(cudaMemsetAsync(p, 0, (std::size_t)n * sizeof(float), stream_), "zero");
    done("zero");
  }
  double sum_squares(const float* x, std::int64_t n) override {
    if (n <= 0) return 0.0;
    if (part_.size() < kSumBlocks + 1) part_ = Buffer<double>(tracker_, MemCategory::Activations, kSumBlocks + 1, false);
    k_sum_squares_part<<<kSumBlocks, kThreads, 0, stream_>>>(x, n, part_.data());
    done("sum_squares");
    k_sum_doubles<<<1, kSumBlocks, 0, stream_>>>(part_.data(), kSumBlocks, part_.data() + kSumBlocks);
    done("sum_squares (total)");
    return read_double(part_.data() + kSumBlocks);
  }
  void adamw(const AdamWStep& s, float* w, float* m, float* v, const float* g, std::uint16_t* wb, std::int64_t n,
             float wd) override {
    if (n <= 0) return;
    k_adamw<<<blocks_for(n), kThreads, 0, stream_>>>(w, m, v, g, wb, n, s.scale, s.b1, s.b2, s.inv_bc1, s.inv_bc2,
                                                     s.lr, wd, s.eps);
    done("adamw");
  }

 private:
  // >>profile (ONEGPU_CUDA_PROFILE): an event after each op, read by take_spans().
  bool profile_ = std::getenv("ONEGPU_CUDA_PROFILE") != nullptr;
  std::vector<std::pair<const char*, cudaEvent_t>> prof_;  // (op, its end), queue order
  cudaEvent_t prof_origin_ = nullptr;                       // the last span's end, kept for the next
  // After queueing an op: its launch checked, and with profiling an event at its end.
  void done(const char* what) {
    check_launch(what);
    if (!profile_) return;
    cudaEvent_t e = nullptr;
    check(cudaEventCreate(&e), "profile event");
    check(cudaEventRecord(e, stream_), "profile event");
    prof_.push_back({what, e});
  }

 public:
  std::vector<std::pair<std::string, double>> take_spans() {
    std::vector<std::pair<std::string, double>> out;
    if (prof_.empty()) return out;
    sync();
    for (auto& [name, e] : prof_) {
      float ms = 0.f;
      if (prof_origin_ && cudaEventElapsedTime(&ms, prof_origin_, e) == cudaSuccess) out.push_back({name, (double)ms});
      if (prof_origin_) cudaEventDestroy(prof_origin_);
      prof_origin_ = e;
    }
    prof_.clear();
    return out;
  }

 private:
  // Threads for a one-block-per-row kernel: a multiple of 32, up to 256.
  static int row_threads(int width) { return std::min(256, std::max(32, (width + 31) / 32 * 32)); }

  float* scratch(std::size_t n) {
    if (scratch_.size() < n) scratch_ = Buffer<float>(tracker_, MemCategory::Activations, n, false);
    return scratch_.data();
  }

  static bool is_device(const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
  }

  // p itself when the device can read it, else a copy in staging slot `slot`. A copy from
  // pageable host memory returns once the source has been read, so the caller may reuse it; a
  // slot is reused only by later ops on the same stream, which run after this op.
  template <class T>
  const T* on_device(const T* p, std::size_t n, int slot) {
    if (!p || n == 0 || is_device(p)) return p;
    Stage& s = stage_[slot];
    const std::size_t bytes = n * sizeof(T);
    if (s.bytes < bytes) {
      check(cudaStreamSynchronize(stream_), "staging");  // the old slot may still be read
      cudaFree(s.p);
      s.p = nullptr;
      s.bytes = 0;
      check(cudaMalloc(&s.p, bytes), "staging buffer");
      s.bytes = bytes;
    }
    check(cudaMemcpyAsync(s.p, p, bytes, cudaMemcpyHostToDevice, stream_), "copy to the device");
    return static_cast<const T*>(s.p);
  }

  double read_double(const double* d) {
    check(cudaMemcpyAsync(host_result_, d, sizeof(double), cudaMemcpyDeviceToHost, stream_), "read result");
    sync();
    return *host_result_;
  }

  struct Stage {
    void* p = nullptr;
    std::size_t bytes = 0;
  };
  struct Timer {
    cudaEvent_t begin = nullptr, end = nullptr;
  };
  Timer& timer(std::uint32_t key) {
    Timer& t = timers_[key];
    if (!t.begin) {
      check(cudaEventCreate(&t.begin), "create a timing event");
      check(cudaEventCreate(&t.end), "create a timing event");
    }
    return t;
  }
  int device_ = 0;
  std::unordered_map<std::uint32_t, Timer> timers_;
  MemoryTracker& tracker_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  bool tf32_ = false, bf16_ = false;
  Stage stage_[3];
  double* host_result_ = nullptr;
  Buffer<float> scratch_, dg_part_;
  Buffer<double> row_loss_, part_;
};

}  // namespace

DeviceMemory& cuda_device_memory() {
  static ManagedMemory m;
  return m;
}

std::unique_ptr<Backend> make_cuda_backend(MemoryTracker& tracker, const CudaOptions& opt) {
  return std::make_unique<CudaBackend>(tracker, opt);
}

std::vector<std::pair<std::string, double>> cuda_op_spans(Backend& b) {
  auto* c = dynamic_cast<CudaBackend*>(&b);
  return c ? c->take_spans() : std::vector<std::pair<std::string, double>>{};
}

// ---- >>info -----------------------------------------------------------------------------------

CudaDeviceInfo cuda_device_info(int device) {
  CudaDeviceInfo info;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
    cudaGetLastError();
    return info;
  }
  info.name = p.name;
  info.sm_count = p.multiProcessorCount;
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  info.memory_bytes = p.totalGlobalMem;
  // Dense bf16 tensor-core peaks from the data sheets (no sparsity).
  const std::string n = info.name;
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("H200") || (has("H100") && (has("SXM") || has("HBM3"))))
    info.bf16_dense_tflops = 989.4;
  else if (has("H100") && has("NVL"))
    info.bf16_dense_tflops = 835.0;
  else if (has("H100"))
    info.bf16_dense_tflops = 756.0;  // PCIe
  else if (has("A100"))
    info.bf16_dense_tflops = 312.0;
  else if (p.major == 9 || (p.major == 8 && p.minor == 0)) {
    int khz = 0;  // same family, unknown board: SMs x clock x dense bf16 flops per SM per clock
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device);
    info.bf16_dense_tflops = info.sm_count * (khz * 1e3) * (p.major == 9 ? 4096.0 : 2048.0) / 1e12;
  }
  return info;
}

}  // namespace onegpu::trainer
