// RUN: whale-opt %s --split-input-file --verify-diagnostics

func.func @gather_shape(%p: tensor<2x16xf32>) {
  // expected-error@+1 {{the whole must be the part with axis 0 times 4: expected 8 in dimension 0, got 6}}
  %x = whale.all_gather %p axis 0 shards 4 : tensor<2x16xf32> -> tensor<6x16xf32>
  return
}

// -----

func.func @slice_axis(%x: tensor<8x16xf32>) {
  // expected-error@+1 {{axis 2 is not an axis of a rank 2 tensor}}
  %s = whale.shard_slice %x axis 2 shards 4 : tensor<8x16xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @one_shard(%x: tensor<8x16xf32>) {
  // expected-error@+1 {{attribute 'shards' failed to satisfy constraint}}
  %s = whale.shard_sum %x shards 1 : tensor<8x16xf32>
  return
}

// -----

func.func @labels(%l: tensor<8x4xf32>, %y: tensor<4xi32>) {
  // expected-error@+1 {{takes logits [..., C / shards] and labels [...]}}
  %c = whale.sharded_cross_entropy %l, %y shards 4 : tensor<8x4xf32>, tensor<4xi32> -> tensor<4xf32>
  return
}

// -----

func.func @param_shard() {
  // expected-error@+1 {{shard must be [axis, shards] with an axis of the result and shards >= 2}}
  %w = whale.param "w" zeros [] {shard = array<i64: 2, 4>} : tensor<16x4xf32>
  return
}

// -----

func.func @peers(%g: tensor<4xf32>) {
  // expected-error@+1 {{takes shards exactly when its group is "shard_peers"}}
  %r = whale.all_reduce %g over "shard_peers" : tensor<4xf32> -> tensor<4xf32>
  return
}
