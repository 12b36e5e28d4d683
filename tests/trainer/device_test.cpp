#include <gtest/gtest.h>

#include "trainer/device.h"
#include "trainer/error.h"

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

TEST(Device, ResolveDeviceNamesAndRefusals) {
  using onegpu::trainer::resolve_device;
  EXPECT_EQ(resolve_device("cpu"), "cpu");
  EXPECT_THROW(resolve_device("tpu"), onegpu::trainer::Error);
  auto info = onegpu::trainer::probe_devices();
  if (info.cuda_devices == 0) {
    EXPECT_EQ(resolve_device("auto"), "cpu");  // quietly: no message, no error
    EXPECT_THROW(resolve_device("cuda"), onegpu::trainer::Error);
  } else {
    EXPECT_EQ(resolve_device("auto"), "cuda");
    EXPECT_EQ(resolve_device("cuda"), "cuda");
  }
}
