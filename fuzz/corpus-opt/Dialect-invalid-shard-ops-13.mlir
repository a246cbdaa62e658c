func.func @all_to_all_shape(%s: tensor<4x10x8xf32>) {
  %e = whale.all_to_all %s split 0 concat 1 shards 2 : tensor<4x10x8xf32> -> tensor<2x10x8xf32>
  return
}
