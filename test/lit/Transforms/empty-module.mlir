// A module with nothing in it passes every pass and pipeline unchanged:
// each loads the whale dialect before it makes an attribute of it
// (-whale-overlap-grad-sync and the rank-programs pipeline crashed).
// RUN: whale-opt %s --whale-fuse-attention | FileCheck %s
// RUN: whale-opt %s --whale-amp-storage | FileCheck %s
// RUN: whale-opt %s --whale-widen-bf16 | FileCheck %s
// RUN: whale-opt %s --whale-gemm-epilogues | FileCheck %s
// RUN: whale-opt %s --whale-fuse-rounded-sums | FileCheck %s
// RUN: whale-opt %s --whale-copy-written-operands | FileCheck %s
// RUN: whale-opt %s --whale-fuse-elementwise | FileCheck %s
// RUN: whale-opt %s --whale-annotate-cost | FileCheck %s
// RUN: whale-opt %s --whale-autodiff | FileCheck %s
// RUN: whale-opt %s --whale-train-step | FileCheck %s
// RUN: whale-opt %s --whale-to-runtime | FileCheck %s
// RUN: whale-opt %s --whale-taskgraph-partition | FileCheck %s
// RUN: whale-opt %s --whale-virtual-devices | FileCheck %s
// RUN: whale-opt %s --whale-pipeline | FileCheck %s
// RUN: whale-opt %s --whale-balance | FileCheck %s
// RUN: whale-opt %s --whale-data-parallel | FileCheck %s
// RUN: whale-opt %s --whale-sharding | FileCheck %s
// RUN: whale-opt %s --whale-rank-programs | FileCheck %s
// RUN: whale-opt %s --whale-shard-optimizer | FileCheck %s
// RUN: whale-opt %s --whale-shard-parameters | FileCheck %s
// RUN: whale-opt %s --whale-prefetch-params | FileCheck %s
// RUN: whale-opt %s --whale-shard-gradients | FileCheck %s
// RUN: whale-opt %s --whale-overlap-grad-sync | FileCheck %s
// RUN: whale-opt %s --whale-grad-pipeline | FileCheck %s
// RUN: whale-opt %s --whale-planning-pipeline | FileCheck %s
// RUN: whale-opt %s --whale-rank-programs-pipeline | FileCheck %s
// RUN: whale-opt %s --whale-runtime-pipeline | FileCheck %s
// RUN: whale-opt %s --whale-train-pipeline | FileCheck %s

// CHECK: module {
// CHECK-NEXT: }
module {}
