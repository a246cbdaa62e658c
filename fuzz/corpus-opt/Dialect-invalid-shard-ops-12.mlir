func.func @all_to_all_axes(%s: tensor<4x10x8xf32>) {
  %e = whale.all_to_all %s split 1 concat 1 shards 2 : tensor<4x10x8xf32> -> tensor<4x10x8xf32>
  return
}
