func.func @all_to_all_weights(%s: tensor<4x6x8xf32>) {
  %e = whale.all_to_all %s split 0 concat 1 shards 2 {weights = array<i64: 3, 1>} : tensor<4x6x8xf32> -> tensor<2x8x8xf32>
  return
}
