//===- GpuTestMain.h - the main of a test binary that needs a GPU -*- C++ -*-===//
//
// Without a GPU (or its driver, or the plugin) the binary says why and
// exits 77, which ctest counts as skipped; with one it runs its tests.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TEST_UNIT_GPU_GPUTESTMAIN_H
#define WHALE_TEST_UNIT_GPU_GPUTESTMAIN_H

#include "runtime/WhaleRuntime.h"

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char **argv) {
  char why[640] = "";
  if (whale_rt_device_check("cuda:0", why, sizeof why) != WHALE_RT_OK) {
    std::printf("skipped: %s\n", why);
    return 77; // ctest's SKIP_RETURN_CODE
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

#endif
