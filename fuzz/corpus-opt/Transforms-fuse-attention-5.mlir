func.func @heads_kept(%x: tensor<2x16x4x8xf32>, %w: tensor<4x2x16x8xf32>) -> (tensor<2x16x4x8xf32>, tensor<2x4x16x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) {
  %q = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %k = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %v = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %o = whale.attention %q, %k, %v scale = 1.0 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  %r = whale.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
  %q2 = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %k2 = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %v2 = whale.transpose %w permutation = [1, 0, 2, 3] : tensor<4x2x16x8xf32> -> tensor<2x4x16x8xf32>
  %o2 = whale.attention %q2, %k2, %v2 scale = 1.0 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  %r2 = whale.transpose %o2 permutation = [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
  %q3 = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %kv = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %o3 = whale.attention %q3, %kv, %kv scale = 1.0 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  %r3 = whale.transpose %o3 permutation = [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
  return %r, %o, %r2, %r3 : tensor<2x16x4x8xf32>, tensor<2x4x16x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>
}
