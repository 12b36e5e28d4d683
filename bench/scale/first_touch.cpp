// What this machine charges for memory a program writes the first time, which is most of what
// the 512-rank run's first step costs beyond a later one (its gradients and Adam moments,
// some 550 MB, are first written then). Maps 512 MiB, hands its pages out with
// MADV_POPULATE_WRITE (what the trainer's set-up does), then writes it twice; once with 4 KiB
// pages and once advised for 2 MiB ones. On the virtual machines this project runs on, the
// first write still costs most of the time after the populate (the host backs a guest page only
// when it is written), so populating ahead moves little of the cost out of the first step.
//   build/bench/scale/first_touch [MiB]
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

int main(int argc, char** argv) {
  const long mib = argc > 1 ? std::atol(argv[1]) : 512;
  if (mib < 1 || mib > 65536) {
    std::fprintf(stderr, "first_touch: MiB must be 1 to 65536\n");
    return 2;
  }
  const std::size_t n = (std::size_t)mib << 20;
  for (int huge = 0; huge < 2; ++huge) {
    void* m = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      std::fprintf(stderr, "first_touch: cannot map %ld MiB\n", mib);
      return 1;
    }
    char* p = static_cast<char*>(m);
#ifdef MADV_HUGEPAGE
    if (huge) ::madvise(p, n, MADV_HUGEPAGE);
#endif
    const double t0 = now();
    bool populated = false;
#ifdef MADV_POPULATE_WRITE
    populated = ::madvise(p, n, MADV_POPULATE_WRITE) == 0;
#endif
    const double t1 = now();
    std::memset(p, 1, n);
    const double t2 = now();
    std::memset(p, 2, n);
    const double t3 = now();
    std::printf("first_touch MiB=%ld pages=%s populate_s=%.3f%s first_write_s=%.3f second_write_s=%.3f ms_per_MiB_first=%.2f\n",
                mib, huge ? "2MiB-advised" : "4KiB", t1 - t0, populated ? "" : "(unsupported)", t2 - t1, t3 - t2,
                (t2 - t0) * 1e3 / (double)mib);
    ::munmap(p, n);
  }
  return 0;
}
