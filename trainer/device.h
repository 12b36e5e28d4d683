#pragma once
// Which compute backends this build and this machine offer.
#include <string>

namespace onegpu::trainer {

struct DeviceInfo {
  bool cuda_built = false;  // the binary carries the CUDA backend
  int cuda_devices = 0;     // GPUs the driver reports (0 without driver or device)
  std::string note;         // why there are none, when there are none
};

DeviceInfo probe_devices();

}  // namespace onegpu::trainer
