//===- RecoveryStateTest.cpp - which fallback plan the survivors run ------===//
//
// After a rank fails, whale-exec goes on under the first fallback plan
// whose devices are all left. A GPU is the one its node and name say; CPU
// devices are a node's threads, numbered afresh by each plan.
//
//===----------------------------------------------------------------------===//

#include "runtime/state/RecoveryState.h"

#include <gtest/gtest.h>

namespace {

using whale::RankDevice;

RankDevice at(const std::string &node, const std::string &name) {
  RankDevice d;
  d.node = node;
  d.name = name;
  return d;
}

TEST(RecoveryState, AGpuIsTheSameGpuInBothPlans) {
  // cuda:1 on a was lost: a plan on cuda:0 and cuda:2 runs, one on
  // cuda:0 and cuda:1 (what a two-GPU plan names first) does not.
  const std::vector<RankDevice> left = {at("a", "cuda:0"), at("a", "cuda:2"),
                                        at("a", "cuda:3")};
  EXPECT_EQ(
      whale::runsOnSurvivors({at("a", "cuda:0"), at("a", "cuda:2")}, left), "");
  EXPECT_EQ(
      whale::runsOnSurvivors({at("a", "cuda:0"), at("a", "cuda:1")}, left),
      "it needs cuda:1 on a, which is not left");
  EXPECT_EQ(whale::runsOnSurvivors({at("b", "cuda:0")}, left),
            "it needs cuda:0 on b, which is not left");
}

TEST(RecoveryState, CpuDevicesCountPerNode) {
  // Three CPU devices left on a, one on b: any three on a and one on b.
  const std::vector<RankDevice> left = {at("a", "cpu:0"), at("a", "cpu:2"),
                                        at("a", "cpu:3"), at("b", "cpu:0")};
  EXPECT_EQ(whale::runsOnSurvivors({at("a", "cpu:0"), at("a", "cpu:1"),
                                    at("a", "cpu:2"), at("b", "cpu:0")},
                                   left),
            "");
  EXPECT_EQ(whale::runsOnSurvivors({at("b", "cpu:0"), at("b", "cpu:1")}, left),
            "it needs more CPU devices on b than are left");
  EXPECT_EQ(whale::runsOnSurvivors({}, left), "");
}

} // namespace
