// RUN: whale-opt %s -split-input-file -whale-copy-written-operands | FileCheck %s
// RUN: whale-opt %s -split-input-file -cse -whale-copy-written-operands | FileCheck %s --check-prefix=CSE
// RUN: whale-opt %s -split-input-file -whale-to-runtime | FileCheck %s --check-prefix=LLVM

// Tensors are values: an all-reduce's operand read again afterwards, or
// returned, keeps its value, so the runtime sums a copy of it.
// CHECK-LABEL: func.func @read_after
// CHECK: %[[G:.*]] = whale.add
// CHECK: %[[C:.*]] = whale.copy %[[G]] : tensor<4xf32>
// CHECK: whale.all_reduce %[[C]] over "replicas"
// CHECK: whale.mul %[[G]]
// CHECK: %[[R:.*]] = whale.copy %arg0
// CHECK: whale.all_reduce %[[R]] over "replicas"
func.func @read_after(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %g = whale.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s = whale.all_reduce %g over "replicas" : tensor<4xf32> -> tensor<4xf32>
  %m = whale.mul %g, %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %t = whale.all_reduce %a over "replicas" : tensor<4xf32> -> tensor<4xf32>
  return %m, %t, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The last reader writes in place: no copy. A bucket naming one value
// twice sums a copy the second time, and a parameter is never written
// but by its update.
// CHECK-LABEL: func.func @last_reader
// CHECK: %[[G:.*]] = whale.add
// CHECK-NOT: whale.copy %[[G]]
// CHECK: %[[W:.*]] = whale.param "w"
// CHECK: %[[H:.*]] = whale.mul
// CHECK: %[[C:.*]] = whale.copy %[[H]]
// CHECK: %[[P:.*]] = whale.copy %[[W]]
// CHECK: whale.all_reduce %[[G]], %[[H]], %[[C]], %[[P]] over "replicas"
func.func @last_reader(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %g = whale.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %w = whale.param "w" zeros [] : tensor<4xf32>
  %h = whale.mul %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s:4 = whale.all_reduce %g, %h, %h, %w over "replicas" : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return %s#0 : tensor<4xf32>
}

// -----

// A started sum is written until its wait: a read between them needs the
// copy as much as one after. Clipping's operands follow the same rule.
// CHECK-LABEL: func.func @started
// CHECK: %[[C:.*]] = whale.copy %[[G:.*]] : tensor<4xf32>
// CHECK: whale.all_reduce_start %[[C]]
// CHECK: whale.neg %[[G]]
// CHECK: %[[D:.*]] = whale.copy %[[S:.*]] : tensor<4xf32>
// CHECK: whale.clip_grad_norm %[[D]]
func.func @started(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %g = whale.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %p = whale.all_reduce_start %g over "replicas" : tensor<4xf32>
  %n = whale.neg %g : tensor<4xf32>
  %s = whale.all_reduce_wait %p : tensor<4xf32>
  %c = whale.clip_grad_norm %s max_norm = 1.0 over "stages" : tensor<4xf32> -> tensor<4xf32>
  return %n, %c, %s : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// What -cse makes of two micro-batches' equal conversions: one cast, read
// by the first micro-batch's product and all-reduced for the second. The
// all-reduce gets a copy, so the product still reads the conversion.
// CSE-LABEL: func.func @merged
// CSE: %[[W:.*]] = whale.cast %arg0 : tensor<4xbf16> to tensor<4xf32>
// CSE-NOT: whale.cast
// CSE: %[[C:.*]] = whale.copy %[[W]]
// CSE: whale.all_reduce %[[C]]
// CSE: whale.mul %[[W]]
func.func @merged(%h: tensor<4xbf16>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %w1 = whale.cast %h : tensor<4xbf16> to tensor<4xf32>
  %w2 = whale.cast %h : tensor<4xbf16> to tensor<4xf32>
  %s = whale.all_reduce %w2 over "replicas" : tensor<4xf32> -> tensor<4xf32>
  %y = whale.mul %w1, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %s, %y : tensor<4xf32>, tensor<4xf32>
}

// -----

// -whale-to-runtime makes the copies itself (after inlining the steps): the
// copy is a reshape call into a new tensor, which the all-reduce sums.
// LLVM-LABEL: llvm.func @lowered
// LLVM: llvm.call @whale_rt_binary(
// LLVM: llvm.call @whale_rt_reshape(%{{.*}}, %[[G:[0-9]+]], %[[C:[0-9]+]]) :
// LLVM: llvm.store %[[C]]
// LLVM: llvm.call @whale_rt_all_reduce(
// LLVM: llvm.call @whale_rt_binary(%{{.*}}, %{{.*}}, %[[G]],
func.func @lowered(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> attributes {whale.rank = {stage = 0 : i64}} {
  %g = whale.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s = whale.all_reduce %g over "replicas" : tensor<4xf32> -> tensor<4xf32>
  %m = whale.mul %g, %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %m : tensor<4xf32>
}
