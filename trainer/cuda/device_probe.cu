// Counts CUDA devices. With no driver cudaGetDeviceCount returns cudaErrorInsufficientDriver,
// with a driver and no GPU cudaErrorNoDevice: both mean "run on the CPU".
#include <cuda_runtime.h>
#include <string>

namespace onegpu::trainer {

int cuda_device_count(std::string* note) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (note)
      *note = err == cudaErrorInsufficientDriver ? "no NVIDIA driver, or one older than this CUDA runtime"
              : err == cudaErrorNoDevice         ? "no CUDA device"
                                                 : cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky error
    return 0;
  }
  if (n == 0 && note) *note = "no CUDA device";
  return n;
}

}  // namespace onegpu::trainer
