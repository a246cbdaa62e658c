//===- GemmEpilogueEquivalenceTest.cpp - plans of fused linear layers -----===//
//
// -whale-gemm-epilogues turns a plan's linear layers into whale.linear ops
// (product, bias and GELU as one call), which GPU plans run as cuBLASLt
// epilogues. Forced on here, on CPU devices (Device::linear's
// composition), the plans must still train as one device does without
// them: the fp32 contract, losses and parameters within 1e-4.
//
//===----------------------------------------------------------------------===//

#include "test/unit/EquivalenceSupport.h"

namespace {

using namespace whale::testing;

void expectEquivalentWithEpilogues(const char *script,
                                   const std::string &cluster) {
  expectEquivalent(source(script), script, cluster, nullptr, nullptr,
                   [](whale::TrainOptions &o) { o.gemmEpilogues = true; });
}

TEST(GemmEpilogueEquivalence, MlpDataParallelOverFourDevices) {
  expectEquivalentWithEpilogues(kMlp, "cpu:4");
}

TEST(GemmEpilogueEquivalence, MlpSplitOverFourDevices) {
  expectEquivalentWithEpilogues(kMlpSplit, "cpu:4");
}

TEST(GemmEpilogueEquivalence, GptTwoStages1F1BNestedDataParallel) {
  expectEquivalentWithEpilogues(kGpt, "cpu:4");
}

} // namespace
