func.func @backward(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>, %d: tensor<4x2xf32>,
                    %b: tensor<2xf32>, %y: tensor<4xi32>, %ids: tensor<4xi32>,
                    %l: tensor<4xf32>)
    -> tensor<4x6xf32> attributes {whale.model} {
  %dw = whale.matmul_grad %x, %w, %d operand = 1 : tensor<4x3xf32>, tensor<3x2xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
  %db = whale.binary_grad add %d, %b, %d operand = 1 : tensor<4x2xf32>, tensor<2xf32>, tensor<4x2xf32> -> tensor<2xf32>
  %dg = whale.unary_grad gelu %d, %d, %d : tensor<4x2xf32>
  %dl = whale.reduce_grad mean %d, %b axes = [0] : tensor<4x2xf32>, tensor<2xf32>
  %dce = whale.cross_entropy_grad %dl, %y, %l : tensor<4x2xf32>, tensor<4xi32>, tensor<4xf32>
  %ds = whale.softmax_grad %dce, %dg axis = 1 : tensor<4x2xf32>
  %dm = whale.causal_mask_grad %ds : tensor<4x2xf32>
  %dx, %dgamma, %dbeta = whale.layernorm_grad %dm, %b, %dm eps = 1.0e-5 : tensor<4x2xf32>, tensor<2xf32>
  %dt = whale.embedding_grad %ids, %dx : tensor<4xi32>, tensor<4x2xf32> -> tensor<8x2xf32>
  %dp = whale.slice_grad %dx axis = 1, start = 2 : tensor<4x2xf32> -> tensor<4x6xf32>
  return %dp : tensor<4x6xf32>
}
