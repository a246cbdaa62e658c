// RUN: whale-opt %s --whale-annotate-cost | FileCheck %s

// Backward ops follow the forward conventions (docs/cost-model.md).
// CHECK-LABEL: func.func @costs
// matmul_grad: as the product, 2 x 8 x 4 x 16
// CHECK: whale.matmul_grad {{.*}}flops = 1024 : i64
// binary_grad: 2 per dout element, then the sum into the operand
// CHECK: whale.binary_grad {{.*}}flops = 68 : i64
// unary_grad: 12 per element for gelu, 2 for the others
// CHECK: whale.unary_grad gelu {{.*}}flops = 384 : i64
// CHECK: whale.unary_grad relu {{.*}}flops = 64 : i64
// CHECK: whale.layernorm_grad {{.*}}flops = 384 : i64
// CHECK: whale.cross_entropy_grad {{.*}}flops = 224 : i64
func.func @costs(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %d: tensor<8x4xf32>,
                 %b: tensor<4xf32>, %y: tensor<8xi32>, %l: tensor<8xf32>) {
  %0 = whale.matmul_grad %x, %w, %d operand = 1 : tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x4xf32> -> tensor<16x4xf32>
  %1 = whale.binary_grad add %d, %b, %d operand = 1 : tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32> -> tensor<4xf32>
  %2 = whale.unary_grad gelu %d, %d, %d : tensor<8x4xf32>
  %3 = whale.unary_grad relu %d, %d, %d : tensor<8x4xf32>
  %4:3 = whale.layernorm_grad %d, %b, %d eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32>
  %5 = whale.cross_entropy_grad %d, %y, %l : tensor<8x4xf32>, tensor<8xi32>, tensor<8xf32>
  return
}
