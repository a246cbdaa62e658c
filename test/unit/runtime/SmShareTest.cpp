//===- SmShareTest.cpp - devices on shares of a GPU's SMs -----------------===//
//
// The host logic of cuda:N@sms=K (runtime/cuda/SmShare.h): the names the
// runtime opens, and which counts a GPU can give, with what the refusal
// says. The green context itself needs a GPU (test/unit/gpu).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/SmShare.h"

#include <gtest/gtest.h>

using whale::rt::cuda::CudaName;
using whale::rt::cuda::parseCudaName;
using whale::rt::cuda::SmResources;
using whale::rt::cuda::smShareError;

namespace {

TEST(SmShare, NamesAreAGpuAndMaybeItsShare) {
  CudaName n;
  EXPECT_FALSE(parseCudaName("cpu:0", n));
  ASSERT_TRUE(parseCudaName("cuda:3", n));
  EXPECT_EQ(n.ordinal, 3);
  EXPECT_EQ(n.sms, 0);
  ASSERT_TRUE(parseCudaName("cuda:0@sms=40", n));
  EXPECT_EQ(n.ordinal, 0);
  EXPECT_EQ(n.sms, 40);
  // Cuda names, but bad ones: the opener refuses them by name.
  ASSERT_TRUE(parseCudaName("cuda:x", n));
  EXPECT_EQ(n.ordinal, -1);
  ASSERT_TRUE(parseCudaName("cuda:1@sms=0", n));
  EXPECT_EQ(n.ordinal, 1);
  EXPECT_EQ(n.sms, -1);
  for (const char *bad : {"cuda:1@sms=", "cuda:1@threads=4", "cuda:1@sms=-8",
                          "cuda:1@sms=9999999", "cuda:@sms=8"}) {
    ASSERT_TRUE(parseCudaName(bad, n)) << bad;
    EXPECT_TRUE(n.sms < 0 || n.ordinal < 0) << bad;
  }
}

/// An H200 as its driver describes it: 132 SMs, shares of 8 at least, in
/// multiples of 8.
SmResources hopper(int free = 132) { return {132, free, 8, 8}; }

TEST(SmShare, CountsTheGpuGroupsItsSmsInAreGiven) {
  for (int sms : {8, 40, 64, 88, 128})
    EXPECT_EQ(smShareError(sms, hopper()), "") << sms;
}

TEST(SmShare, OtherCountsAreRefusedNamingTheNearestOnes) {
  EXPECT_EQ(smShareError(44, hopper()),
            "this GPU gives SMs to a share in multiples of 8, at least 8 (132 "
            "in all): sms=40 or 48 can be given, not 44");
  // Below the least share only the least one is near.
  EXPECT_EQ(smShareError(4, hopper()),
            "this GPU gives SMs to a share in multiples of 8, at least 8 (132 "
            "in all): sms=8 can be given, not 4");
  EXPECT_EQ(smShareError(140, hopper()),
            "sms=140 is more than this GPU's 132 SMs");
  // An A100's shares: at least 4, in multiples of 2.
  EXPECT_EQ(smShareError(6, {108, 108, 4, 2}), "");
  EXPECT_NE(smShareError(7, {108, 108, 4, 2}).find("sms=6 or 8"),
            std::string::npos);
}

TEST(SmShare, SharesOfOneGpuDoNotOverlap) {
  // 88 given to one device leave 44 whole SMs for the next: 40 fit, 48
  // do not.
  EXPECT_EQ(smShareError(40, hopper(44)), "");
  EXPECT_EQ(smShareError(48, hopper(44)),
            "sms=48 but only 44 of this GPU's 132 SMs are left: the other "
            "devices on it hold the rest");
}

} // namespace
