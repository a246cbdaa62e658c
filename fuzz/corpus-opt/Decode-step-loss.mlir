module {
  func.func @m(%tokens: tensor<2x1xi32>, %p: tensor<i32>, %kc: tensor<2x2x16x8xf32>, %vc: tensor<2x2x16x8xf32>) -> tensor<f32> attributes {whale.model} {
    %t = whale.param "m/table" normal [0.0, 0.02] : tensor<256x32xf32>
    %x = whale.embedding %t[%tokens] : tensor<256x32xf32>, tensor<2x1xi32> -> tensor<2x1x32xf32>
    %wq = whale.param "m/wq" normal [0.0, 0.02] : tensor<32x32xf32>
    %q0 = whale.matmul %x, %wq : tensor<2x1x32xf32>, tensor<32x32xf32> -> tensor<2x1x32xf32>
    %q1 = whale.reshape %q0 : tensor<2x1x32xf32> -> tensor<2x1x4x8xf32>
    %q2 = whale.transpose %q1 permutation = [0, 2, 1, 3] : tensor<2x1x4x8xf32> -> tensor<2x4x1x8xf32>
    %q = whale.rope %q2 at %p theta = 1.0e4 : tensor<2x4x1x8xf32>
    %wk = whale.param "m/wk" normal [0.0, 0.02] : tensor<32x16xf32>
    %k0 = whale.matmul %x, %wk : tensor<2x1x32xf32>, tensor<32x16xf32> -> tensor<2x1x16xf32>
    %k1 = whale.reshape %k0 : tensor<2x1x16xf32> -> tensor<2x1x2x8xf32>
    %k2 = whale.transpose %k1 permutation = [0, 2, 1, 3] : tensor<2x1x2x8xf32> -> tensor<2x2x1x8xf32>
    %k = whale.rope %k2 at %p theta = 1.0e4 : tensor<2x2x1x8xf32>
    %o, %kc2, %vc2 = whale.kv_attention %q, %k, %k2 into %kc, %vc at %p scale = 0.35 : tensor<2x4x1x8xf32>, tensor<2x2x1x8xf32>, tensor<2x2x16x8xf32>
    %l = whale.reduce_mean %o axes = [0, 1, 2, 3] : tensor<2x4x1x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
