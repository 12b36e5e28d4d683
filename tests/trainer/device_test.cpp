#include <gtest/gtest.h>

#include "trainer/device.h"
#include "trainer/error.h"
#include "trainer/ops/cpu_backend.h"

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

// Where a device step's time goes: spans of one op name are added up and counted, largest total
// first, names in order where totals tie; a backend that records none (the CPU's) gives none.
TEST(Device, OpSpansAreTotalledByNameLargestFirst) {
  using namespace onegpu::trainer;
  const auto t = total_by_op({{"matmul", 2.0}, {"adamw", 0.5}, {"matmul", 3.0}, {"copy", 0.5}, {"attention", 4.0}});
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].name, "matmul");
  EXPECT_DOUBLE_EQ(t[0].ms, 5.0);
  EXPECT_EQ(t[0].count, 2);
  EXPECT_EQ(t[1].name, "attention");
  EXPECT_EQ(t[2].name, "adamw");  // 0.5 each: by name
  EXPECT_EQ(t[3].name, "copy");
  EXPECT_EQ(t[3].count, 1);
  EXPECT_TRUE(total_by_op({}).empty());
  MemoryTracker mt;
  CpuBackend cpu(mt);
  EXPECT_TRUE(device_op_profile(cpu).empty());
}
