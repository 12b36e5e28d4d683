#include "trainer/device.h"

#include <algorithm>
#include <map>

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

std::vector<OpTotal> total_by_op(const std::vector<std::pair<std::string, double>>& spans_ms) {
  std::map<std::string, OpTotal> by;
  for (const auto& [name, ms] : spans_ms) {
    OpTotal& t = by[name];
    t.name = name;
    t.ms += ms;
    ++t.count;
  }
  std::vector<OpTotal> out;
  for (auto& [name, t] : by) out.push_back(t);
  std::stable_sort(out.begin(), out.end(), [](const OpTotal& a, const OpTotal& b) { return a.ms > b.ms; });
  return out;
}

std::vector<OpTotal> device_op_profile(Backend& b) {
#ifdef ONEGPU_HAVE_CUDA
  return total_by_op(cuda_op_spans(b));
#else
  (void)b;
  return {};
#endif
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
