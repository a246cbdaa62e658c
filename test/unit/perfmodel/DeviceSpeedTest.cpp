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

TEST(DeviceSpeed, AShareOfAGpuIsItsDataSheetScaledByItsSms) {
  DeviceDescription d;
  d.gpu = true;
  d.model = "H200";
  d.sms = 44; // a third of its 132
  const DeviceModel *sheet = findGpuModel("H200");
  ASSERT_NE(sheet, nullptr);
  EXPECT_DOUBLE_EQ(smShare(d), 44.0 / 132);
  DeviceModel m = deviceModelOf(d);
  EXPECT_EQ(m.name, "H200@sms=44"); // profiled apart from the whole GPU
  EXPECT_DOUBLE_EQ(m.matmulFlops, sheet->matmulFlops / 3);
  EXPECT_DOUBLE_EQ(m.matmulFlopsBf16, sheet->matmulFlopsBf16 / 3);
  EXPECT_DOUBLE_EQ(m.vectorFlops, sheet->vectorFlops / 3);
  EXPECT_DOUBLE_EQ(m.memoryBandwidth, sheet->memoryBandwidth / 3);
  EXPECT_EQ(m.parallelUnits, 44); // its GEMMs' waves fill 44 SMs
  EXPECT_EQ(m.memoryBytes, sheet->memoryBytes);
  // Twice the SMs, twice the nominal rate; all of them or more: the GPU.
  DeviceDescription twice = d;
  twice.sms = 88;
  d.model.clear();
  twice.model.clear();
  EXPECT_DOUBLE_EQ(rateOf(twice), 2 * rateOf(d));
  EXPECT_DOUBLE_EQ(rateOf(d), kNominalGpuFlops / 3);
  twice.sms = 500;
  EXPECT_EQ(smShare(twice), 1);
  EXPECT_EQ(rateOf(twice), kNominalGpuFlops);
}

TEST(DeviceSpeed, AShareKnownByItsRateKeepsThatRate) {
  DeviceDescription d;
  d.gpu = true;
  d.flops = 20e12;
  d.sms = 66;
  DeviceModel m = deviceModelOf(d);
  const DeviceModel *h100 = findGpuModel("H100-SXM");
  EXPECT_EQ(m.name, "cuda@sms=66");
  EXPECT_DOUBLE_EQ(m.matmulFlops, 20e12);
  EXPECT_EQ(m.parallelUnits, 66);
  EXPECT_DOUBLE_EQ(m.memoryBandwidth, h100->memoryBandwidth / 2);
  // A CPU device has no SMs to share.
  DeviceDescription cpu;
  cpu.threads = 2;
  cpu.sms = 8;
  EXPECT_EQ(smShare(cpu), 1);
}

TEST(DeviceSpeed, ContextsSideBySideOnAGpuShareIt) {
  // Three contexts of one GPU known by its rate alone, no SM shares: each
  // a third of the nominal GPU, of its bandwidth and of its SMs.
  DeviceDescription d;
  d.gpu = true;
  d.contexts = 3;
  EXPECT_DOUBLE_EQ(smShare(d), 1.0 / 3);
  EXPECT_DOUBLE_EQ(rateOf(d), kNominalGpuFlops / 3);
  DeviceModel m = deviceModelOf(d);
  const DeviceModel *h100 = findGpuModel("H100-SXM");
  EXPECT_EQ(m.name, "cuda@contexts=3");
  EXPECT_EQ(m.parallelUnits, h100->parallelUnits / 3);
  EXPECT_DOUBLE_EQ(m.memoryBandwidth, h100->memoryBandwidth / 3);
  // An SM share is priced by its SMs whatever the count of contexts.
  d.sms = 66;
  EXPECT_DOUBLE_EQ(smShare(d), 0.5);
  // A CPU device shares nothing.
  DeviceDescription cpu;
  cpu.contexts = 2;
  EXPECT_EQ(smShare(cpu), 1);
}
