// RUN: whale-opt %s --whale-to-runtime=sites=true | FileCheck %s
// RUN: whale-opt %s --whale-to-runtime | FileCheck %s --check-prefix=PLAIN

// With sites, each op of a rank program's body first tells the runtime its
// position there (0: the param, 1: the matmul, 2: the reduction), so a
// traced run names each op's time by its place (whale profile).
// CHECK-LABEL: llvm.func @r(
// CHECK: %[[P0:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT: llvm.call @whale_rt_set_site(%{{.*}}, %[[P0]]) : (!llvm.ptr, i64) -> ()
// CHECK: llvm.call @whale_rt_param
// CHECK: %[[P1:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: llvm.call @whale_rt_set_site(%{{.*}}, %[[P1]])
// CHECK: llvm.call @whale_rt_matmul
// CHECK: %[[P2:.*]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: llvm.call @whale_rt_set_site(%{{.*}}, %[[P2]])
// CHECK: llvm.call @whale_rt_reduce

// Without, no marks.
// PLAIN-LABEL: llvm.func @r(
// PLAIN-NOT: whale_rt_set_site
func.func @r(%x: tensor<4x8xf32>) -> tensor<f32> attributes {whale.rank = {stage = 0 : i64}} {
  %w = whale.param "m/w" normal [0.0, 0.02] : tensor<8x8xf32>
  %h = whale.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %s = whale.reduce_mean %h axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %s : tensor<f32>
}
