// RUN: whale-opt %s --split-input-file --whale-shard-optimizer --whale-shard-parameters | FileCheck %s
// RUN: whale-opt %s --split-input-file --whale-shard-optimizer --whale-shard-parameters -cse | FileCheck %s --check-prefix=CSE
// RUN: whale-opt %s --split-input-file --whale-shard-optimizer --whale-shard-parameters --whale-to-runtime | FileCheck %s --check-prefix=LLVM

// Two layers over two replicas (ZeRO stage 3). Each parameter lives on its
// update's owner (`owner` on its whale.param), nobody is handed it after
// the step (no broadcast), and each layer is gathered before the ops that
// read it: layer 0 before its forward and again before its backward, layer
// 1 once, as its backward follows its forward with no other layer between.
// The updates write the owners' parameters, not the gathered copies.
// CHECK-LABEL: func.func @m_stage0
// CHECK-DAG: %[[W0:.*]] = whale.param "m/l0/w" zeros [] {group = "replicas", owner = 0 : i64} : tensor<16x8xf32>
// CHECK-DAG: %[[B0:.*]] = whale.param "m/l0/b" zeros [] {group = "replicas", owner = 1 : i64} : tensor<8xf32>
// CHECK-DAG: %[[W1:.*]] = whale.param "m/l1/w" zeros [] {group = "replicas", owner = 1 : i64} : tensor<8x4xf32>
// CHECK: %[[G0:.*]]:2 = whale.gather_params %[[W0]], %[[B0]] from [0, 1] over "replicas" : tensor<16x8xf32>, tensor<8xf32>
// CHECK-NEXT: whale.matmul %{{.*}}, %[[G0]]#0
// CHECK-NEXT: whale.add %{{.*}}, %[[G0]]#1
// CHECK-NEXT: %[[G1:.*]] = whale.gather_params %[[W1]] from [1] over "replicas" : tensor<8x4xf32>
// CHECK-NEXT: whale.matmul %{{.*}}, %[[G1]]
// CHECK: whale.matmul_grad %{{.*}}, %[[G1]], %{{.*}} operand = 0
// CHECK: %[[H0:.*]] = whale.gather_params %[[W0]] from [0] over "replicas" : tensor<16x8xf32>
// CHECK-NEXT: whale.matmul_grad %{{.*}}, %[[H0]], %{{.*}} operand = 0
// CHECK: whale.all_reduce {{.*}} {owners = array<i64: 0, 1, 1>}
// CHECK: whale.sgd_update %[[W0]], {{.*}}owner = 0
// CHECK: whale.sgd_update %[[B0]], {{.*}}owner = 1
// CHECK: whale.sgd_update %[[W1]], {{.*}}owner = 1
// CHECK-NOT: whale.broadcast
// Gathers are never merged: the backward's is another tensor, made when
// needed.
// CSE-LABEL: func.func @m_stage0
// CSE-COUNT-3: whale.gather_params
// The parameter is made on its owner; elsewhere a handle without values.
// LLVM-LABEL: llvm.func @m_stage0
// LLVM: llvm.call @whale_rt_owns
// LLVM: llvm.cond_br %{{.*}}, ^[[MINE:bb[0-9]+]], ^[[ELSE:bb[0-9]+]]{{$}}
// LLVM: ^[[MINE]]:
// LLVM: llvm.call @whale_rt_param(
// LLVM: ^[[ELSE]]:
// LLVM: llvm.call @whale_rt_param_elsewhere(
// LLVM: llvm.call @whale_rt_gather_params(
module attributes {whale.config = #whale.settings<shard_parameters = true>} {
  func.func @m_stage0(%x: tensor<2x16xf32>, %dy: tensor<2x4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 2 : i64, stage = 0 : i64}} {
    %w0 = whale.param "m/l0/w" zeros [] : tensor<16x8xf32>
    %b0 = whale.param "m/l0/b" zeros [] : tensor<8xf32>
    %w1 = whale.param "m/l1/w" zeros [] : tensor<8x4xf32>
    %h = whale.matmul %x, %w0 : tensor<2x16xf32>, tensor<16x8xf32> -> tensor<2x8xf32>
    %hb = whale.add %h, %b0 : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    %y = whale.matmul %hb, %w1 : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
    %dw1 = whale.matmul_grad %hb, %w1, %dy operand = 1 : tensor<2x8xf32>, tensor<8x4xf32>, tensor<2x4xf32> -> tensor<8x4xf32>
    %dh = whale.matmul_grad %hb, %w1, %dy operand = 0 : tensor<2x8xf32>, tensor<8x4xf32>, tensor<2x4xf32> -> tensor<2x8xf32>
    %db0 = whale.reduce_sum %dh axes = [0] : tensor<2x8xf32> -> tensor<8xf32>
    %dx = whale.matmul_grad %x, %w0, %dh operand = 0 : tensor<2x16xf32>, tensor<16x8xf32>, tensor<2x8xf32> -> tensor<2x16xf32>
    %dw0 = whale.matmul_grad %x, %w0, %dh operand = 1 : tensor<2x16xf32>, tensor<16x8xf32>, tensor<2x8xf32> -> tensor<16x8xf32>
    %r:3 = whale.all_reduce %dw0, %db0, %dw1 over "replicas" : tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32> -> tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>
    whale.sgd_update %w0, %r#0 {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<16x8xf32>
    whale.sgd_update %b0, %r#1 {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>
    whale.sgd_update %w1, %r#2 {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<8x4xf32>
    %l = whale.reduce_sum %y axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// The same under amp: the weights, which only products read (amp rounds
// their operands to bf16), are gathered in bf16; the bias, which an add
// reads, in f32. The runtime is told which.
// CHECK-LABEL: func.func @a_stage0
// CHECK: whale.gather_params %{{.*}}, %{{.*}} from [0, 1] over "replicas" {bf16 = array<i1: true, false>}
// CHECK: whale.gather_params %{{.*}} from [1] over "replicas" {bf16 = array<i1: true>}
// CHECK: whale.gather_params %{{.*}} from [0] over "replicas" {bf16 = array<i1: true>}
// LLVM: llvm.mlir.global internal constant @[[FLAGS:__whale_const_[0-9]+]](dense<[1, 0]> : tensor<2xi32>)
// LLVM-LABEL: llvm.func @a_stage0
// LLVM: %[[F:[0-9]+]] = llvm.mlir.addressof @[[FLAGS]]
// LLVM: llvm.call @whale_rt_gather_params(%arg0, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[F]], %{{[0-9]+}})
module attributes {whale.config = #whale.settings<shard_parameters = true, amp = "bf16">} {
  func.func @a_stage0(%x: tensor<2x16xf32>, %dy: tensor<2x4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 2 : i64, stage = 0 : i64}} {
    %w0 = whale.param "m/l0/w" zeros [] : tensor<16x8xf32>
    %b0 = whale.param "m/l0/b" zeros [] : tensor<8xf32>
    %w1 = whale.param "m/l1/w" zeros [] : tensor<8x4xf32>
    %h = whale.matmul %x, %w0 : tensor<2x16xf32>, tensor<16x8xf32> -> tensor<2x8xf32>
    %hb = whale.add %h, %b0 : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    %y = whale.matmul %hb, %w1 : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
    %dw1 = whale.matmul_grad %hb, %w1, %dy operand = 1 : tensor<2x8xf32>, tensor<8x4xf32>, tensor<2x4xf32> -> tensor<8x4xf32>
    %dh = whale.matmul_grad %hb, %w1, %dy operand = 0 : tensor<2x8xf32>, tensor<8x4xf32>, tensor<2x4xf32> -> tensor<2x8xf32>
    %db0 = whale.reduce_sum %dh axes = [0] : tensor<2x8xf32> -> tensor<8xf32>
    %dx = whale.matmul_grad %x, %w0, %dh operand = 0 : tensor<2x16xf32>, tensor<16x8xf32>, tensor<2x8xf32> -> tensor<2x16xf32>
    %dw0 = whale.matmul_grad %x, %w0, %dh operand = 1 : tensor<2x16xf32>, tensor<16x8xf32>, tensor<2x8xf32> -> tensor<16x8xf32>
    %r:3 = whale.all_reduce %dw0, %db0, %dw1 over "replicas" : tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32> -> tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>
    whale.sgd_update %w0, %r#0 {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<16x8xf32>
    whale.sgd_update %b0, %r#1 {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>
    whale.sgd_update %w1, %r#2 {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<8x4xf32>
    %l = whale.reduce_sum %y axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Without shard_parameters the pass leaves stage 1 as it is.
// CHECK-LABEL: func.func @m_stage0
// CHECK: whale.param "m/l0/w" zeros [] : tensor<4x4xf32>
// CHECK-NOT: whale.gather_params
// CHECK: whale.broadcast
module attributes {whale.config = #whale.settings<shard_optimizer = true>} {
  func.func @m_stage0(%x: tensor<2x4xf32>, %g: tensor<4x4xf32>) -> tensor<2x4xf32> attributes {whale.rank = {replicas = 2 : i64, stage = 0 : i64}} {
    %w0 = whale.param "m/l0/w" zeros [] : tensor<4x4xf32>
    %y = whale.matmul %x, %w0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %r = whale.all_reduce %g over "replicas" : tensor<4x4xf32> -> tensor<4x4xf32>
    whale.sgd_update %w0, %r {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4x4xf32>
    return %y : tensor<2x4xf32>
  }
}
