// RUN: whale-opt %s --whale-rank-programs | FileCheck %s
// RUN: whale-opt %s --whale-rank-programs --whale-to-runtime | FileCheck %s --check-prefix=LLVM

// Two stages (1F1B, 2 micro-batches of 2) replicated twice: the planned
// module `whale compile --emit=planned --cluster cpu:4` prints for a
// two-block model. Each stage becomes one program; its inputs are its
// replica's 4 rows.
// CHECK-NOT: func.func @m(
// CHECK-LABEL: func.func @m_stage0(%{{.*}}: tensor<4x4xf32>, %{{.*}}: tensor<4xi32>) -> tensor<f32>
// CHECK-SAME: whale.rank = {
// CHECK-SAME: stage = 0 : i64
// CHECK: whale.param "m/w0"
// F0: its slice of the rows, forward, the activation to stage 1.
// CHECK: whale.slice %{{.*}} axis = 0, start = 0, end = 2
// CHECK: whale.matmul
// CHECK: whale.send %{{.*}} to stage 1 tag 0 : tensor<2x8xf32>
// F1 comes before B0 on the first stage under 1F1B.
// CHECK: whale.slice %{{.*}} axis = 0, start = 2, end = 4
// CHECK: whale.send %{{.*}} to stage 1 tag 8192
// CHECK: whale.recv from stage 1 tag 4096 : tensor<2x8xf32>
// CHECK: whale.matmul_grad
// CHECK: whale.recv from stage 1 tag 12288
// The two micro-batches' gradients add, then the replicas'; the norm is
// over both stages.
// CHECK: %[[SUM:.*]] = whale.add
// CHECK: %[[R:.*]] = whale.all_reduce %[[SUM]] over "replicas"
// CHECK: %[[C:.*]] = whale.clip_grad_norm %[[R]] max_norm = 1.000000e+00 over "stages"
// CHECK: whale.sgd_update %{{.*}}, %[[C]]
// Not the last stage: its share of the loss is zero.
// CHECK: %[[Z:.*]] = whale.constant 0.0
// CHECK: return %[[Z]]

// CHECK-LABEL: func.func @m_stage1
// CHECK: whale.recv from stage 0 tag 0
// CHECK: whale.cross_entropy
// The loss gradient is seeded with the weight micro / global = 2 / 8.
// CHECK: whale.constant 2.500000e-01
// CHECK: whale.send %{{.*}} to stage 0 tag 4096
// CHECK: whale.all_reduce
// CHECK: whale.clip_grad_norm {{.*}} over "stages"
// CHECK: whale.sgd_update
// Its loss share: each micro-batch's mean loss, weighted, added.
// CHECK: whale.mul
// CHECK: whale.mul
// CHECK: %[[L:.*]] = whale.add
// CHECK: return %[[L]]

// Lowered, the communication is calls of the runtime by stage and group.
// LLVM: llvm.func @m_stage0(
// LLVM: llvm.call @whale_rt_send
// LLVM: llvm.call @whale_rt_recv
// LLVM: llvm.call @whale_rt_all_reduce
// LLVM: llvm.call @whale_rt_clip_grad_norm_group
// LLVM: llvm.func @m_stage1(
module attributes {whale.config = #whale.settings<num_micro_batch = 2>} {
  func.func @m(%arg0: tensor<2x4xf32>, %arg1: tensor<2xi32>) -> tensor<f32> attributes {whale.model, whale.plan = {buckets = [[["m/w0"]], [["m/w1"]]], devices = 4 : i64, global_batch = 8 : i64, grad_weight = 2.500000e-01 : f64, grid = array<i64: 0, 2, 1, 3>, micro_batch = 2 : i64, micro_batches = 2 : i64, replicas = 2 : i64, schedule = "1f1b", stages = 2 : i64}, whale.train = {clip_grad_norm = 1.000000e+00 : f64, data = {batch = 8 : i64, kind = "synthetic", seed = 1 : i64}, optimizer = {kind = "sgd", lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64}, steps = 2 : i64}} {
    %0 = whale.taskgraph replicate -> (tensor<2x8xf32>) attributes {schedule = #whale.schedule<F0 F1 B0 B1>, stage = 0 : i64, virtual_device = array<i64: 0, 2>} {
      %2 = whale.param "m/w0" normal [0.000000e+00, 1.000000e-01] : tensor<4x8xf32>
      %3 = whale.matmul %arg0, %2 : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
      %4 = whale.relu %3 : tensor<2x8xf32>
      whale.yield %4 : tensor<2x8xf32>
    }
    %1 = whale.taskgraph replicate -> (tensor<f32>) attributes {schedule = #whale.schedule<F0 B0 F1 B1>, stage = 1 : i64, virtual_device = array<i64: 1, 3>} {
      %2 = whale.param "m/w1" normal [0.000000e+00, 1.000000e-01] : tensor<8x3xf32>
      %3 = whale.matmul %0, %2 : tensor<2x8xf32>, tensor<8x3xf32> -> tensor<2x3xf32>
      %4 = whale.cross_entropy %3, %arg1 : tensor<2x3xf32>, tensor<2xi32> -> tensor<2xf32>
      %5 = whale.reduce_mean %4 axes = [0] : tensor<2xf32> -> tensor<f32>
      whale.yield %5 : tensor<f32>
    }
    return %1 : tensor<f32>
  }
}
