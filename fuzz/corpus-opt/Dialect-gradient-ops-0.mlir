func.func @grads(%x: tensor<8x16xf32>, %w: tensor<4x16xf32>, %d: tensor<8x4xf32>,
                 %b: tensor<4xf32>, %s: tensor<2x4x4xf32>, %ids: tensor<2x3xi32>,
                 %e: tensor<2x3x4xf32>, %y: tensor<8xi32>, %l: tensor<8xf32>,
                 %p: tensor<8x2xf32>, %h: tensor<8x4xbf16>) {
  %0 = whale.matmul_grad %x, %w, %d operand = 1 {transpose_rhs} : tensor<8x16xf32>, tensor<4x16xf32>, tensor<8x4xf32> -> tensor<4x16xf32>
  %1 = whale.binary_grad add %d, %b, %d operand = 1 : tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32> -> tensor<4xf32>
  %2 = whale.unary_grad gelu %d, %d, %d : tensor<8x4xf32>
  %3 = whale.softmax_grad %d, %d axis = -1 : tensor<8x4xf32>
  %4 = whale.causal_mask_grad %s : tensor<2x4x4xf32>
  %5:3 = whale.layernorm_grad %d, %b, %d eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32>
  %6 = whale.embedding_grad %ids, %e : tensor<2x3xi32>, tensor<2x3x4xf32> -> tensor<10x4xf32>
  %7 = whale.cross_entropy_grad %d, %y, %l : tensor<8x4xf32>, tensor<8xi32>, tensor<8xf32>
  %ceh = whale.cross_entropy_grad %h, %y, %l : tensor<8x4xbf16>, tensor<8xi32>, tensor<8xf32> -> f32
  %cel = whale.cross_entropy %h, %y : tensor<8x4xbf16>, tensor<8xi32> -> tensor<8xf32>
  %8 = whale.reduce_grad max %d, %l axes = [1] : tensor<8x4xf32>, tensor<8xf32>
  %9 = whale.slice_grad %p axis = 1, start = 1 : tensor<8x2xf32> -> tensor<8x4xf32>
  return
}
