#include "trainer/device.h"

#include "trainer/error.h"
#ifdef ONEGPU_HAVE_CUDA
#include "trainer/cuda/cuda_backend.h"
#endif

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

std::string resolve_device(const std::string& want) {
  if (want == "cpu") return want;
  if (want != "cuda" && want != "auto") throw Error("--device must be cpu, cuda or auto (got '" + want + "')");
  DeviceInfo d = probe_devices();
  if (d.cuda_devices > 0) return "cuda";
  if (want == "auto") return "cpu";
  throw Error("--device cuda: no CUDA device here (" + d.note + ")");
}

const char* matmul_math_name(MatmulMath m) {
  switch (m) {
    case MatmulMath::tf32: return "tf32";
    case MatmulMath::bf16: return "bf16";
    default: return "fp32";
  }
}

std::unique_ptr<Backend> make_device_backend(MemoryTracker& tracker, MatmulMath math, int device) {
#ifdef ONEGPU_HAVE_CUDA
  tracker.use_device_memory(&cuda_device_memory());
  CudaOptions o;
  o.tf32 = math == MatmulMath::tf32;
  o.bf16 = math == MatmulMath::bf16;
  o.device = device;
  return make_cuda_backend(tracker, o);
#else
  (void)tracker;
  (void)math;
  (void)device;
  throw Error("this build has no CUDA backend (configure with nvcc present, ONEGPU_CUDA=ON)");
#endif
}

}  // namespace onegpu::trainer
