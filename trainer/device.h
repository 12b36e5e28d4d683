#pragma once
// Which compute backends this build and this machine offer, and the one place that builds a
// device backend for a run (so nothing outside trainer/cuda needs CUDA headers).
#include <memory>
#include <string>

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

// The CUDA backend on device 0, with `tracker` switched to device memory first (so it must not
// have allocated anything yet). Throws Error where this build or machine has no CUDA.
std::unique_ptr<Backend> make_device_backend(MemoryTracker& tracker, bool tf32 = false);

}  // namespace onegpu::trainer
