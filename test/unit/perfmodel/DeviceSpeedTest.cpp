//===- DeviceSpeedTest.cpp - one decision of a device's speed -------------===//
//
// perf::rateOf and perf::deviceModelOf are the one place a cluster's device
// becomes a rate and a device model. These pin what each kind of device
// gets, so that the planner's rates and the simulator's models cannot drift
// apart again.
//
//===----------------------------------------------------------------------===//

#include "perfmodel/DeviceSpeed.h"

#include <gtest/gtest.h>

using namespace whale::perf;

namespace {

TEST(DeviceSpeed, ADeclaredRateWinsOverEveryNominalOne) {
  DeviceDescription cpu;
  cpu.threads = 8;
  cpu.flops = 3e11;
  EXPECT_EQ(rateOf(cpu), 3e11);
  DeviceDescription gpu;
  gpu.gpu = true;
  gpu.flops = 1e14;
  EXPECT_EQ(rateOf(gpu), 1e14);
}

TEST(DeviceSpeed, UndeclaredRatesAreNominalPerCoreOrPerGpu) {
  DeviceDescription cpu;
  cpu.threads = 4;
  EXPECT_EQ(rateOf(cpu), 4 * kNominalCoreFlops);
  cpu.threads = 0; // no threads known: one core, never zero
  EXPECT_EQ(rateOf(cpu), kNominalCoreFlops);
  DeviceDescription gpu;
  gpu.gpu = true;
  EXPECT_EQ(rateOf(gpu), kNominalGpuFlops);
}

TEST(DeviceSpeed, ANamedGpuIsItsDataSheetWithTheDeclaredMemory) {
  DeviceDescription d;
  d.gpu = true;
  d.model = "h100"; // case-insensitive, short name
  d.flops = 1;      // a data sheet outranks a declared rate
  DeviceModel m = deviceModelOf(d);
  const DeviceModel *sheet = findGpuModel("H100-SXM");
  ASSERT_NE(sheet, nullptr);
  EXPECT_EQ(m.name, "H100-SXM");
  EXPECT_EQ(m.matmulFlops, sheet->matmulFlops);
  EXPECT_EQ(m.memoryBytes, sheet->memoryBytes);
  d.memory = int64_t(40) << 30;
  EXPECT_EQ(deviceModelOf(d).memoryBytes, int64_t(40) << 30);
}

TEST(DeviceSpeed, AGpuKnownByItsRateIsAnH100ScaledToIt) {
  DeviceDescription d;
  d.gpu = true;
  d.flops = 33.5e12; // half an H100's fp32 peak
  DeviceModel m = deviceModelOf(d);
  const DeviceModel *h100 = findGpuModel("H100-SXM");
  EXPECT_EQ(m.name, "cuda");
  EXPECT_TRUE(m.gpu);
  EXPECT_DOUBLE_EQ(m.matmulFlops, 33.5e12);
  EXPECT_DOUBLE_EQ(m.matmulFlopsBf16, h100->matmulFlopsBf16 / 2);
  EXPECT_DOUBLE_EQ(m.vectorFlops, h100->vectorFlops / 2);
  // Its memory bandwidth is the H100's: only the arithmetic is scaled.
  EXPECT_EQ(m.memoryBandwidth, h100->memoryBandwidth);
}

TEST(DeviceSpeed, ACpuDeviceIsPricedAtItsRateOverItsThreads) {
  DeviceDescription d;
  d.threads = 2;
  d.memory = 1 << 30;
  DeviceModel m = deviceModelOf(d);
  EXPECT_FALSE(m.gpu);
  EXPECT_EQ(m.matmulFlops, rateOf(d));
  EXPECT_EQ(m.parallelUnits, 2);
  EXPECT_EQ(m.memoryBytes, 1 << 30);
}

} // namespace
