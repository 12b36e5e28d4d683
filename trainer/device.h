#pragma once
// Which compute backends this build and this machine offer, and the one place that builds a
// device backend for a run (so nothing outside trainer/cuda needs CUDA headers).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trainer/memory/tracker.h"
#include "trainer/ops/backend.h"

namespace onegpu::trainer {

struct DeviceInfo {
  bool cuda_built = false;  // the binary carries the CUDA backend
  int cuda_devices = 0;     // GPUs the driver reports (0 without driver or device)
  std::string note;         // why there are none, when there are none
};

DeviceInfo probe_devices();

// "cpu", "cuda" or "auto" to the device a run uses: auto is cuda when a GPU is present, else
// cpu. Throws Error (one line, saying why) for cuda where there is none, or an unknown name.
std::string resolve_device(const std::string& want);

// How a device backend's matmuls do their arithmetic. fp32: as the CPU (the GPU tests compare
// against it). tf32: fp32 data, tensor cores round the inputs to TF32. bf16: the inputs rounded
// to bf16 (as the weights are stored), tensor cores at their dense bf16 rate, fp32 accumulation
// and results; the benchmark's MFU is against that rate.
enum class MatmulMath { fp32, tf32, bf16 };
const char* matmul_math_name(MatmulMath m);

// The CUDA backend on GPU `device`, with `tracker` switched to device memory first (so it must not
// have allocated anything yet). Throws Error where this build or machine has no CUDA.
std::unique_ptr<Backend> make_device_backend(MemoryTracker& tracker, MatmulMath math = MatmulMath::fp32, int device = 0);

// Where a device step's time goes, by op (ONEGPU_CUDA_PROFILE=1): the backend records an event
// after every op it queues, and an op's span runs from the previous op's end to its own, so time
// the stream sat waiting for the host (the MoE routing's host steps, a loss read back) counts in
// the op queued after the wait. Spans of one name added up, largest total first (ties by name).
struct OpTotal {
  std::string name;
  double ms = 0.0;
  int count = 0;
};
std::vector<OpTotal> total_by_op(const std::vector<std::pair<std::string, double>>& spans_ms);
// The spans a CUDA backend recorded since the last call, totalled (waits for the device first);
// empty when profiling is off, for a backend that is not CUDA, or in a build without CUDA.
std::vector<OpTotal> device_op_profile(Backend& b);

}  // namespace onegpu::trainer
