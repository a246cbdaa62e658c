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

// -----

func.func @weights_count(%p: tensor<2x16xf32>) {
  // expected-error@+1 {{weights must be 2 positive numbers, one per shard}}
  %x = whale.all_gather %p axis 0 shards 2 {weights = array<i64: 3, 1, 1>} : tensor<2x16xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @weighted_part(%x: tensor<8x16xf32>) {
  // expected-error@+1 {{a part of 5 is none of the weighted parts of 16 (it is cut in 4 units, each part a whole number of them)}}
  %p = whale.shard_slice %x axis 1 shards 2 {weights = array<i64: 3, 1>} : tensor<8x16xf32> -> tensor<8x5xf32>
  return
}

// -----

func.func @weighted_param() {
  // expected-error@+1 {{shard must be [axis, shards, extent] (the whole's) beside shard_weights with an axis of the result and shards >= 2}}
  %w = whale.param "w" zeros [] {shard = array<i64: 1, 2>, shard_weights = array<i64: 3, 1>} : tensor<16x12xf32>
  return
}

// -----

func.func @weights_without_shard() {
  // expected-error@+1 {{has shard_weights but no shard}}
  %w = whale.param "w" zeros [] {shard_weights = array<i64: 3, 1>} : tensor<16x12xf32>
  return
}

// -----

func.func @weights_over_whole(%x: tensor<8x4xf32>) {
  // expected-error@+1 {{weights add up to more than the whole's 4: a part must be a whole number of units}}
  %p = whale.shard_slice %x axis 1 shards 2 {weights = array<i64: 4, 1>} : tensor<8x4xf32> -> tensor<8x1xf32>
  return
}

// -----

func.func @parts_overflow(%p: tensor<4611686018427387904xf32>) {
  // expected-error@+1 {{the part's 4611686018427387904 times 4 overflows}}
  %x = whale.all_gather %p axis 0 shards 4 : tensor<4611686018427387904xf32> -> tensor<8xf32>
  return
}

// -----

func.func @all_to_all_axes(%s: tensor<4x10x8xf32>) {
  // expected-error@+1 {{moves a part between two distinct axes of one rank, got split 1 and concat 1}}
  %e = whale.all_to_all %s split 1 concat 1 shards 2 : tensor<4x10x8xf32> -> tensor<4x10x8xf32>
  return
}

// -----

func.func @all_to_all_shape(%s: tensor<4x10x8xf32>) {
  // expected-error@+1 {{the whole must be the part with axis 1 times 2: expected 20 in dimension 1, got 10}}
  %e = whale.all_to_all %s split 0 concat 1 shards 2 : tensor<4x10x8xf32> -> tensor<2x10x8xf32>
  return
}

// -----

func.func @all_to_all_kept_axis(%s: tensor<4x10x8xf32>) {
  // expected-error@+1 {{keeps every axis but 1 and 0}}
  %e = whale.all_to_all %s split 0 concat 1 shards 2 : tensor<4x10x8xf32> -> tensor<2x20x4xf32>
  return
}

// -----

func.func @all_to_all_weights(%s: tensor<4x6x8xf32>) {
  // expected-error@+1 {{a part of 2 is none of the weighted parts of 4}}
  %e = whale.all_to_all %s split 0 concat 1 shards 2 {weights = array<i64: 3, 1>} : tensor<4x6x8xf32> -> tensor<2x8x8xf32>
  return
}

// -----

func.func @shared_parts(%x: tensor<2x4x16x8xf32>) {
  // expected-error@+1 {{parts 3 must be fewer than the shards 4 and divide them}}
  %k = whale.shard_slice %x axis 1 shards 4 parts 3 : tensor<2x4x16x8xf32> -> tensor<2x1x16x8xf32>
  return
}

// -----

func.func @shared_shape(%x: tensor<2x2x16x8xf32>) {
  // expected-error@+1 {{gives one of 2 parts of 'tensor<2x2x16x8xf32>' along axis 1, not 'tensor<2x2x16x8xf32>'}}
  %k = whale.shard_slice %x axis 1 shards 4 parts 2 : tensor<2x2x16x8xf32> -> tensor<2x2x16x8xf32>
  return
}

// -----

func.func @shared_weights(%x: tensor<2x2x16x8xf32>) {
  // expected-error@+1 {{takes parts held by several ranks in equal parts only, not with weights}}
  %k = whale.shard_slice %x axis 1 shards 4 parts 2 {weights = array<i64: 1, 1, 1, 1>} : tensor<2x2x16x8xf32> -> tensor<2x1x16x8xf32>
  return
}

// -----

func.func @shared_axis(%x: tensor<2x3x16x8xf32>) {
  // expected-error@+1 {{axis 1 of 'tensor<2x3x16x8xf32>' must divide into 2 parts}}
  %k = whale.shard_slice %x axis 1 shards 4 parts 2 : tensor<2x3x16x8xf32> -> tensor<2x1x16x8xf32>
  return
}
