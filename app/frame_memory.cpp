#include "app/frame_memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace onegpu::app {

void keep_frame_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
}

}  // namespace onegpu::app
