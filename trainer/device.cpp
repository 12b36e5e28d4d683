#include "trainer/device.h"

namespace onegpu::trainer {

#ifdef ONEGPU_HAVE_CUDA
int cuda_device_count(std::string* note);  // cuda/device_probe.cu
#endif

DeviceInfo probe_devices() {
  DeviceInfo info;
#ifdef ONEGPU_HAVE_CUDA
  info.cuda_built = true;
  info.cuda_devices = cuda_device_count(&info.note);
#else
  info.note = "built without CUDA";
#endif
  return info;
}

}  // namespace onegpu::trainer
