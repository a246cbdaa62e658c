// RUN: whale-opt %s --split-input-file --whale-overlap-grad-sync | FileCheck %s
// RUN: whale-opt %s --split-input-file --whale-overlap-grad-sync --whale-to-runtime | FileCheck %s --check-prefix=LLVM

// Two micro-batches' backward, two buckets. Each bucket starts as soon as
// its last micro-batch's gradient is added in (the sums move up to their
// operands), before the backward that follows; each wait stands before
// the first reader of its sums.
// CHECK-LABEL: func.func @m_stage0
// CHECK: %[[G1A:.*]] = whale.matmul_grad %{{.*}} operand = 1 {{.*}} -> tensor<8x3xf32>
// CHECK: %[[G1B:.*]] = whale.matmul_grad %{{.*}} operand = 1 {{.*}} -> tensor<8x3xf32>
// CHECK-NEXT: %[[S1:.*]] = whale.add %[[G1A]], %[[G1B]]
// CHECK-NEXT: %[[P1:.*]] = whale.all_reduce_start %[[S1]] over "replicas" : tensor<8x3xf32>
// CHECK-NEXT: %[[DX:.*]] = whale.matmul_grad %{{.*}} operand = 0
// CHECK-NEXT: %[[G0B:.*]] = whale.matmul_grad %{{.*}}, %[[DX]] operand = 1 {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: %[[S0:.*]] = whale.add %{{.*}}, %[[G0B]]
// CHECK-NEXT: %[[P0:.*]] = whale.all_reduce_start %[[S0]] over "replicas" : tensor<4x8xf32>
// CHECK-NEXT: %[[R0:.*]] = whale.all_reduce_wait %[[P0]] : tensor<4x8xf32>
// CHECK-NEXT: whale.sgd_update %{{.*}}, %[[R0]]
// CHECK-NEXT: %[[R1:.*]] = whale.all_reduce_wait %[[P1]] : tensor<8x3xf32>
// CHECK-NEXT: whale.sgd_update %{{.*}}, %[[R1]]
// CHECK-NOT: whale.all_reduce {{.*}}over
// LLVM-LABEL: llvm.func @m_stage0
// LLVM: llvm.call @whale_rt_all_reduce_start(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[REQ:.*]]) : (!llvm.ptr, i32, i32, i32, !llvm.ptr, !llvm.ptr) -> i32
// LLVM: %[[ID:.*]] = llvm.load %[[REQ]] : !llvm.ptr -> i64
// LLVM: llvm.call @whale_rt_all_reduce_wait(%{{.*}}, %{{.*}}) : (!llvm.ptr, i64) -> i32
func.func @m_stage0(%x: tensor<2x4xf32>, %h: tensor<2x8xf32>, %dy: tensor<2x3xf32>) -> tensor<f32> attributes {whale.rank = {stage = 0 : i64}} {
  %w0 = whale.param "m/w0" zeros [] : tensor<4x8xf32>
  %w1 = whale.param "m/w1" zeros [] : tensor<8x3xf32>
  // Micro-batch 0.
  %g1a = whale.matmul_grad %h, %w1, %dy operand = 1 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<8x3xf32>
  %dxa = whale.matmul_grad %h, %w1, %dy operand = 0 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<2x8xf32>
  %g0a = whale.matmul_grad %x, %w0, %dxa operand = 1 : tensor<2x4xf32>, tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  // Micro-batch 1.
  %g1b = whale.matmul_grad %h, %w1, %dy operand = 1 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<8x3xf32>
  %dxb = whale.matmul_grad %h, %w1, %dy operand = 0 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<2x8xf32>
  %g0b = whale.matmul_grad %x, %w0, %dxb operand = 1 : tensor<2x4xf32>, tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  // The running sums and the sync, as the rank programs emit them.
  %s0 = whale.add %g0a, %g0b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s1 = whale.add %g1a, %g1b : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<8x3xf32>
  %r1 = whale.all_reduce %s1 over "replicas" : tensor<8x3xf32> -> tensor<8x3xf32>
  %r0 = whale.all_reduce %s0 over "replicas" : tensor<4x8xf32> -> tensor<4x8xf32>
  whale.sgd_update %w0, %r0 {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4x8xf32>
  whale.sgd_update %w1, %r1 {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<8x3xf32>
  %l = whale.constant 0.0 : tensor<f32>
  return %l : tensor<f32>
}

// -----

// A sum whose operand is read elsewhere stays where it is (moved up, its
// result would live longer and nothing would be freed sooner). Shard peers
// keep their group; the wait stands before the clipping that reads it.
// CHECK-LABEL: func.func @m_stage0
// CHECK: %[[G:.*]] = whale.matmul_grad
// CHECK-NEXT: %[[K:.*]] = whale.mul %[[G]], %[[G]]
// CHECK-NEXT: %[[S:.*]] = whale.add %[[G]], %[[G]]
// CHECK-NEXT: %[[P:.*]] = whale.all_reduce_start %[[S]], %[[K]] over "shard_peers" {shards = 2 : i64}
// CHECK-NEXT: %[[R:.*]]:2 = whale.all_reduce_wait %[[P]]
// CHECK-NEXT: whale.clip_grad_norm %[[R]]#0, %[[R]]#1
// The group is WHALE_RT_GROUP_SHARD_PEERS (2), then the shards, then the
// count of tensors.
// LLVM-LABEL: llvm.func @m_stage0
// LLVM: %[[REQ:.*]] = llvm.alloca %{{.*}} x i64
// LLVM-NEXT: %[[KIND:.*]] = llvm.mlir.constant(2 : i32) : i32
// LLVM-NEXT: %[[SHARDS:.*]] = llvm.mlir.constant(2 : i32) : i32
// LLVM-NEXT: %[[N:.*]] = llvm.mlir.constant(2 : i32) : i32
// LLVM: llvm.call @whale_rt_all_reduce_start(%{{.*}}, %[[KIND]], %[[SHARDS]], %[[N]], %{{.*}}, %[[REQ]])
func.func @m_stage0(%x: tensor<2x4xf32>, %dy: tensor<2x8xf32>) -> tensor<f32> attributes {whale.rank = {stage = 0 : i64}} {
  %w0 = whale.param "m/w0" zeros [] : tensor<4x8xf32>
  %g = whale.matmul_grad %x, %w0, %dy operand = 1 : tensor<2x4xf32>, tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  %k = whale.mul %g, %g : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s = whale.add %g, %g : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r:2 = whale.all_reduce %s, %k over "shard_peers" {shards = 2 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  %c:2 = whale.clip_grad_norm %r#0, %r#1 max_norm = 1.0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  whale.sgd_update %w0, %c#0 {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4x8xf32>
  %l = whale.constant 0.0 : tensor<f32>
  return %l : tensor<f32>
}

// -----

// A later stage of a pipeline: each micro-batch's backward ends with the
// send of its input gradient to the stage before, which waits for it. The
// sums stay after the send that stood before them (moved above it, they
// would lengthen the pipeline's path once per micro-batch); the bucket
// starts after the last one, and nothing moves above either send.
// CHECK-LABEL: func.func @m_stage1
// CHECK: %[[GA:.*]] = whale.matmul_grad %{{.*}} operand = 1
// CHECK-NEXT: %[[DXA:.*]] = whale.matmul_grad %{{.*}} operand = 0
// CHECK-NEXT: whale.send %[[DXA]] to stage 0 tag 0
// CHECK-NEXT: %[[GB:.*]] = whale.matmul_grad %{{.*}} operand = 1
// CHECK-NEXT: %[[DXB:.*]] = whale.matmul_grad %{{.*}} operand = 0
// CHECK-NEXT: whale.send %[[DXB]] to stage 0 tag 1
// CHECK-NEXT: %[[S:.*]] = whale.add %[[GA]], %[[GB]]
// CHECK-NEXT: %[[P:.*]] = whale.all_reduce_start %[[S]] over "replicas"
// CHECK-NEXT: %[[R:.*]] = whale.all_reduce_wait %[[P]]
// CHECK-NEXT: whale.sgd_update %{{.*}}, %[[R]]
func.func @m_stage1(%h: tensor<2x8xf32>, %dy: tensor<2x3xf32>) -> tensor<f32> attributes {whale.rank = {stage = 1 : i64}} {
  %w1 = whale.param "m/w1" zeros [] : tensor<8x3xf32>
  // Micro-batch 0.
  %ga = whale.matmul_grad %h, %w1, %dy operand = 1 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<8x3xf32>
  %dxa = whale.matmul_grad %h, %w1, %dy operand = 0 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<2x8xf32>
  whale.send %dxa to stage 0 tag 0 : tensor<2x8xf32>
  // Micro-batch 1.
  %gb = whale.matmul_grad %h, %w1, %dy operand = 1 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<8x3xf32>
  %dxb = whale.matmul_grad %h, %w1, %dy operand = 0 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<2x8xf32>
  whale.send %dxb to stage 0 tag 1 : tensor<2x8xf32>
  %s = whale.add %ga, %gb : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<8x3xf32>
  %r = whale.all_reduce %s over "replicas" : tensor<8x3xf32> -> tensor<8x3xf32>
  whale.sgd_update %w1, %r {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<8x3xf32>
  %l = whale.constant 0.0 : tensor<f32>
  return %l : tensor<f32>
}

// -----

// grad_sync = "after_backward": every sum stays after the backward, as the
// rank programs put it (Megatron-LM's data parallelism of 2021).
// CHECK-LABEL: func.func @a_stage0
// CHECK: whale.matmul_grad
// CHECK: whale.matmul_grad
// CHECK-NEXT: %[[S:.*]] = whale.add
// CHECK-NEXT: %[[R:.*]] = whale.all_reduce %[[S]] over "replicas"
// CHECK-NEXT: whale.sgd_update %{{.*}}, %[[R]]
// CHECK-NOT: all_reduce_start
// LLVM-LABEL: llvm.func @a_stage0
// LLVM-NOT: whale_rt_all_reduce_start
module attributes {whale.config = #whale.settings<grad_sync = "after_backward">} {
func.func @a_stage0(%h: tensor<2x8xf32>, %dy: tensor<2x3xf32>) -> tensor<f32> attributes {whale.rank = {stage = 0 : i64}} {
  %w1 = whale.param "a/w1" zeros [] : tensor<8x3xf32>
  %ga = whale.matmul_grad %h, %w1, %dy operand = 1 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<8x3xf32>
  %gb = whale.matmul_grad %h, %w1, %dy operand = 1 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<8x3xf32>
  %s = whale.add %ga, %gb : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<8x3xf32>
  %r = whale.all_reduce %s over "replicas" : tensor<8x3xf32> -> tensor<8x3xf32>
  whale.sgd_update %w1, %r {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<8x3xf32>
  %l = whale.constant 0.0 : tensor<f32>
  return %l : tensor<f32>
}
}
