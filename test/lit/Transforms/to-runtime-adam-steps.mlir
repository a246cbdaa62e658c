// RUN: whale-opt %s -split-input-file --whale-to-runtime | FileCheck %s
// RUN: whale-opt %s -split-input-file --whale-to-runtime=sites=true | FileCheck %s --check-prefix=SITES

// Marked for a profile (sites), every update is its own call, timed at
// its own site.
// SITES-LABEL: llvm.func @three_then_one
// SITES-COUNT-4: llvm.call @whale_rt_adam_step(
// SITES-NOT: @whale_rt_adam_steps
// SITES-LABEL: llvm.func @by_owner
// SITES-COUNT-3: llvm.call @whale_rt_adam_step(
// SITES-NOT: @whale_rt_adam_steps

// Consecutive Adam updates with the same hyperparameters are one call,
// whale_rt_adam_steps over arrays of their parameters and gradients (a
// GPU updates them in one launch). An update with other hyperparameters
// ends the run and starts its own; a lone update keeps whale_rt_adam_step.
// CHECK-LABEL: llvm.func @three_then_one
// CHECK: %[[N:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK: llvm.call @whale_rt_adam_steps(%{{.*}}, %[[N]],
// CHECK-NOT: llvm.call @whale_rt_adam_steps
// CHECK: llvm.call @whale_rt_adam_step(
// CHECK-NOT: llvm.call @whale_rt_adam_step
// CHECK: llvm.return
func.func @three_then_one(%g0: tensor<4x4xf32>, %g1: tensor<4xf32>, %g2: tensor<2x4xf32>, %g3: tensor<2xf32>) -> tensor<f32> attributes {whale.model} {
  %w0 = whale.param "w0" zeros [] : tensor<4x4xf32>
  %b0 = whale.param "b0" zeros [] : tensor<4xf32>
  %w1 = whale.param "w1" zeros [] : tensor<2x4xf32>
  %b1 = whale.param "b1" zeros [] : tensor<2xf32>
  whale.adam_update %w0, %g0 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64, decoupled} : tensor<4x4xf32>
  whale.adam_update %b0, %g1 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64, decoupled} : tensor<4xf32>
  whale.adam_update %w1, %g2 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.1 : f64, decoupled} : tensor<2x4xf32>
  whale.adam_update %b1, %g3 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, decoupled} : tensor<2xf32>
  %l = whale.constant 0.0 : tensor<f32>
  return %l : tensor<f32>
}

// -----

// Optimizer state sharded (ZeRO 1): a run's updates go by owner, each
// owner's in one call taken where whale_rt_owns says so: owner 5's two
// (w0, w1) together, then owner 7's one.
// CHECK-LABEL: llvm.func @by_owner
// CHECK: %[[OWNER5:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK: llvm.call @whale_rt_owns(%{{.*}}, %{{.*}}, %{{.*}}, %[[OWNER5]],
// CHECK: llvm.cond_br %{{.*}}, ^[[MINE5:bb[0-9]+]], ^[[NEXT5:bb[0-9]+]]{{$}}
// CHECK: ^[[MINE5]]:
// CHECK: %[[TWO:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: llvm.call @whale_rt_adam_steps(%{{.*}}, %[[TWO]],
// CHECK: ^[[NEXT5]]:
// CHECK: %[[OWNER7:.*]] = llvm.mlir.constant(7 : i32) : i32
// CHECK: llvm.call @whale_rt_owns(%{{.*}}, %{{.*}}, %{{.*}}, %[[OWNER7]],
// CHECK: llvm.cond_br %{{.*}}, ^[[MINE7:bb[0-9]+]], ^[[NEXT7:bb[0-9]+]]{{$}}
// CHECK: ^[[MINE7]]:
// CHECK-NEXT: llvm.call @whale_rt_adam_step(
// CHECK: ^[[NEXT7]]:
// CHECK-NOT: @whale_rt_adam_step
// CHECK: llvm.return
module {
  func.func @by_owner(%g0: tensor<4x4xf32>, %g1: tensor<4xf32>, %g2: tensor<2x4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 8 : i64, stage = 0 : i64}} {
    %w0 = whale.param "w0" zeros [] : tensor<4x4xf32>
    %b0 = whale.param "b0" zeros [] : tensor<4xf32>
    %w1 = whale.param "w1" zeros [] : tensor<2x4xf32>
    whale.adam_update %w0, %g0 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, owner = 5 : i64, group = "replicas"} : tensor<4x4xf32>
    whale.adam_update %b0, %g1 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, owner = 7 : i64, group = "replicas"} : tensor<4xf32>
    whale.adam_update %w1, %g2 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, owner = 5 : i64, group = "replicas"} : tensor<2x4xf32>
    %l = whale.constant 0.0 : tensor<f32>
    return %l : tensor<f32>
  }
}
