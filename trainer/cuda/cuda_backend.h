#pragma once
// The CUDA backend: every Backend op on device memory, on one stream of one GPU.
//
// Use (trainer/device.h wraps this for the trainer and the command line):
//   1. probe_devices().cuda_devices > 0, else there is nothing to run on;
//   2. tracker.use_device_memory(&cuda_device_memory()) before the model allocates anything, so
//      every Buffer (weights, gradients, optimizer state, activations) is device memory charged
//      to its category as on the CPU;
//   3. make_cuda_backend(tracker) and hand it to the Model.
//
// What it does:
//   - matmuls through cuBLAS (fp32 inputs, fp32 accumulation; bf16 weights are widened first by
//     bf16_to_f32, as on the CPU). CudaOptions::tf32 lets the tensor cores round inputs to TF32
//     (for speed; results then differ from the CPU's in the 3rd or 4th digit); CudaOptions::bf16
//     rounds both inputs to bf16 in a scratch buffer (round to nearest even, as the weights'
//     copies are made) and multiplies them on the tensor cores with fp32 accumulation
//     (cublasGemmEx): the dense bf16 rate the benchmark's MFU is measured against, at the cost of
//     bf16 rounding of the activations too (2 to 3 significant digits);
//   - every other op is a kernel of ours (cuda_backend.cu). No atomics: sums that cross rows
//     are deterministic. Embedding backward and scatter-add add in the CPU's order (exactly
//     its bits); norm-gain gradients add fixed chunks of rows, then the chunks in order;
//   - ops are queued on one stream and return at once, except the two that hand a number to
//     the host: cross_entropy (the loss) and sum_squares (the gradient norm); sync() waits.
//   - Index arrays and weights given in plain host memory (a Batch's tokens, the combine
//     gates the MoE code builds in a std::vector) are copied to the device first.
//
// Where the host waits for the device inside a step (what the model's present API forces):
//   per block, forward: moe_route (top-k and the auxiliary losses run on the host, after the
//     router's softmax) and the copy of the combine gates (from a std::vector);
//   per block, backward: the router's backward (moe_route_backward: a loop over [T, E] on the
//     host, which reads the gates' gradients);
//   per step: the tokens (embedding), the targets and the loss (cross_entropy), the gradient
//     norm (sum_squares), and the end of the AdamW update;
//   and any Buffer allocated zeroed (cudaMemset, then the host waits), or freed beyond the
//     tracker's cache (cudaFree waits). Moving routing and the router's backward into kernels
//     removes the per-block waits; that is the next step for speed.
//
// Linking: the CUDA runtime is static and cuBLAS is opened at run time (dlopen of
// libcublas.so.13), so every binary starts on machines with no driver and no CUDA libraries.
//
// Ranks: a split run (trainer/parallel) gives every virtual rank its own CudaBackend (its own
// stream and cuBLAS handle) on the same GPU; copy_bytes and after() carry data between them
// device to device, ordered by events, with no host wait. Engine ops are timed with a CUDA event
// pair each (mark_begin / mark_end), read after the step's sync for the virtual clock.
//
// What it does not do (yet): cuBLAS's workspace is not charged to the tracker; parallel_tasks
// runs the experts one after another on the one stream (grouped GEMMs or streams would overlap
// them); the one-rank trainer's pieces are timed by waiting for the device (StepRunner), not
// with events; a rank's handle and stream cost memory, so hundreds of virtual ranks on one GPU
// are heavy; one process per GPU (NCCL, nccl_comm.h) waits for the backend before each
// transfer (no overlap). Run once on one H200 (scripts/device-check; README, "What has run where").
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trainer/memory/tracker.h"
#include "trainer/ops/backend.h"

namespace onegpu::trainer {

struct CudaOptions {
  int device = 0;     // CUDA device ordinal
  bool tf32 = false;  // let cuBLAS use TF32 tensor cores for the fp32 matmuls
  bool bf16 = false;  // round the matmuls' inputs to bf16 (cublasGemmEx, fp32 accumulation)
};

// Device memory for MemoryTracker::use_device_memory: unified (managed) memory, so the host
// steps the model still has (MoE routing, its backward, probes, checkpoints) can read it after
// Backend::sync(). One object for the process.
DeviceMemory& cuda_device_memory();

// Throws Error with one line (no device, no cuBLAS library, ...) when the backend cannot start.
// tracker: where the backend's scratch (attention backward) is charged, as activations.
std::unique_ptr<Backend> make_cuda_backend(MemoryTracker& tracker, const CudaOptions& opt = {});

// Name and dense bf16 tensor-core peak of a device, for the benchmark's MFU (0 when unknown).
struct CudaDeviceInfo {
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  double bf16_dense_tflops = 0.0;
  std::size_t memory_bytes = 0;
};
CudaDeviceInfo cuda_device_info(int device = 0);

// With ONEGPU_CUDA_PROFILE set when the backend was made: the (op name, ms) spans it recorded
// since the last call, in queue order (trainer/device.h: device_op_profile says what a span is).
// Waits for the device. Empty otherwise, or for a backend that is not CUDA.
std::vector<std::pair<std::string, double>> cuda_op_spans(Backend& b);

}  // namespace onegpu::trainer
