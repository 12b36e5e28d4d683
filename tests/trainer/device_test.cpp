#include <gtest/gtest.h>

#include "trainer/device.h"

TEST(Device, ProbeReportsACountAndAReasonWhenZero) {
  auto info = onegpu::trainer::probe_devices();
  EXPECT_GE(info.cuda_devices, 0);
  if (info.cuda_devices == 0) {
    EXPECT_FALSE(info.note.empty());
  }
#ifdef ONEGPU_HAVE_CUDA
  EXPECT_TRUE(info.cuda_built);
#else
  EXPECT_FALSE(info.cuda_built);
#endif
}

TEST(Device, GpuTestsSkipWithoutAGpu) {
  auto info = onegpu::trainer::probe_devices();
  if (info.cuda_devices == 0) GTEST_SKIP() << "no GPU present (" << info.note << ")";
  EXPECT_GT(info.cuda_devices, 0);
}
