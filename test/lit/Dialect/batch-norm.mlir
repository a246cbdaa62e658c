// RUN: whale-opt %s | whale-opt | FileCheck %s
// RUN: whale-opt %s --mlir-print-op-generic | whale-opt | FileCheck %s
// RUN: whale-opt %s --whale-annotate-cost | FileCheck %s --check-prefix=COST

// Batch normalization: three results (the output and the statistics it
// used), running statistics that are frozen parameters, and its gradient.
// CHECK-LABEL: func.func @batch_norm
// CHECK: whale.param "bn/running_mean" zeros [] {frozen} : tensor<4xf32>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = whale.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} momentum = 1.000000e-01 eps = 1.000000e-05 : tensor<8x4x6x6xf32>, tensor<4xf32>
// CHECK: whale.batch_norm {{.*}} momentum = 0.000000e+00 eps = 1.000000e-03 {row_copies = 2 : i64} : tensor<8x4xf32>, tensor<4xf32>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = whale.batch_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x4x6x6xf32>, tensor<4xf32>
// 1152 elements: 8 FLOPs each forward, 9 backward.
// COST: whale.batch_norm {{.*}}flops = 9216 : i64
// COST: whale.batch_norm_grad {{.*}}flops = 10368 : i64
func.func @batch_norm(%x: tensor<8x4x6x6xf32>, %f: tensor<8x4xf32>, %dy: tensor<8x4x6x6xf32>) -> tensor<8x4x6x6xf32> {
  %g = whale.param "bn/gamma" ones [] : tensor<4xf32>
  %b = whale.param "bn/beta" zeros [] : tensor<4xf32>
  %rm = whale.param "bn/running_mean" zeros [] {frozen} : tensor<4xf32>
  %rv = whale.param "bn/running_var" ones [] {frozen} : tensor<4xf32>
  %y, %m, %s = whale.batch_norm %x, %g, %b, %rm, %rv momentum = 0.1 eps = 1.0e-5 : tensor<8x4x6x6xf32>, tensor<4xf32>
  %y2, %m2, %s2 = whale.batch_norm %f, %g, %b, %rm, %rv momentum = 0.0 eps = 1.0e-3 {row_copies = 2} : tensor<8x4xf32>, tensor<4xf32>
  %dx, %dg, %db = whale.batch_norm_grad %x, %g, %m, %s, %dy : tensor<8x4x6x6xf32>, tensor<4xf32>
  return %dx : tensor<8x4x6x6xf32>
}
