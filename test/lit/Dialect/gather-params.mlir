// RUN: whale-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// A layer's parameters, held by one replica each (ZeRO stage 3), gathered
// into new tensors on every replica.
// CHECK-LABEL: func.func @gathered
// CHECK: whale.param "m/w" zeros [] {group = "replicas", owner = 1 : i64} : tensor<4x4xf32>
// CHECK: whale.gather_params %{{.*}}, %{{.*}} from [1, 0] over "replicas" : tensor<4x4xf32>, tensor<4xf32>
// CHECK: whale.gather_params %{{.*}} from [0] over "shard_peers" {shards = 2 : i64} : tensor<2x4xf32>
func.func @gathered(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = whale.param "m/w" zeros [] {group = "replicas", owner = 1 : i64} : tensor<4x4xf32>
  %b = whale.param "m/b" zeros [] {group = "replicas", owner = 0 : i64} : tensor<4xf32>
  %p = whale.param "m/p" zeros [] {shard = array<i64: 0, 2>, group = "shard_peers", shards = 2 : i64, owner = 0 : i64} : tensor<2x4xf32>
  %g:2 = whale.gather_params %w, %b from [1, 0] over "replicas" : tensor<4x4xf32>, tensor<4xf32>
  %q = whale.gather_params %p from [0] over "shard_peers" {shards = 2 : i64} : tensor<2x4xf32>
  %y = whale.matmul %x, %g#0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

func.func @not_a_param(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{gathers parameters: its operands must come from whale.param}}
  %g = whale.gather_params %x from [0] over "replicas" : tensor<4x4xf32>
  return
}

// -----

func.func @owners_count() {
  %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
  // expected-error @+1 {{has 2 owners for 1 parameters: it needs one per parameter}}
  %g = whale.gather_params %w from [0, 1] over "replicas" : tensor<4x4xf32>
  return
}

// -----

func.func @another_owner() {
  %w = whale.param "m/w" zeros [] {group = "replicas", owner = 1 : i64} : tensor<4x4xf32>
  // expected-error @+1 {{gathers 'm/w' from 0 over "replicas", but its whale.param places it on 1 over "replicas"}}
  %g = whale.gather_params %w from [0] over "replicas" : tensor<4x4xf32>
  return
}

// -----

func.func @bad_group() {
  %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
  // expected-error @+1 {{takes shards exactly when its group is "shard_peers"}}
  %g = whale.gather_params %w from [0] over "shard_peers" : tensor<4x4xf32>
  return
}

// -----

func.func @owner_without_group() {
  // expected-error @+1 {{has an owner but no group to own it in}}
  %w = whale.param "m/w" zeros [] {owner = 1 : i64} : tensor<4x4xf32>
  return
}

// -----

func.func @owned_among_stages() {
  // expected-error @+1 {{is owned among the replicas or the shard peers that sum its gradient, not the stages}}
  %w = whale.param "m/w" zeros [] {group = "stages", owner = 1 : i64} : tensor<4x4xf32>
  return
}

// -----

func.func @group_without_owner() {
  // expected-error @+1 {{takes a group and shards only with an owner}}
  %w = whale.param "m/w" zeros [] {group = "replicas"} : tensor<4x4xf32>
  return
}

// -----

// Started a layer ahead, waited for before the readers.
// CHECK-LABEL: func.func @started
// CHECK: %[[P:.*]] = whale.gather_params_start %{{.*}} from [1] over "replicas" : tensor<4x4xf32>
// CHECK: whale.gather_params_wait %[[P]] : tensor<4x4xf32>
func.func @started() -> tensor<4x4xf32> {
  %w = whale.param "m/w" zeros [] {group = "replicas", owner = 1 : i64} : tensor<4x4xf32>
  %p = whale.gather_params_start %w from [1] over "replicas" : tensor<4x4xf32>
  %g = whale.gather_params_wait %p : tensor<4x4xf32>
  return %g : tensor<4x4xf32>
}

// -----

func.func @never_waited() {
  %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
  // expected-error @+1 {{must be ended by exactly one whale.gather_params_wait}}
  %p = whale.gather_params_start %w from [0] over "replicas" : tensor<4x4xf32>
  return
}

// -----

func.func @other_types() {
  %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
  %p = whale.gather_params_start %w from [0] over "replicas" : tensor<4x4xf32>
  // expected-error @+1 {{results must have the types of the parameters its whale.gather_params_start gathers}}
  %g = whale.gather_params_wait %p : tensor<4xf32>
  return
}

// -----

// A micro-batch's gradients, summed on their owners, added into the
// owners' running sums.
// CHECK-LABEL: func.func @into_sums
// CHECK: whale.add_into_owners %{{.*}} into %{{.*}} to [1] over "shard_peers" {shards = 2 : i64} : tensor<4xf32> into tensor<4xf32> -> tensor<4xf32>
func.func @into_sums(%g: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %r = whale.add_into_owners %g into %s to [1] over "shard_peers" {shards = 2 : i64} : tensor<4xf32> into tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @into_other_sums(%g: tensor<4xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{needs one sum of each gradient's type, and results of the sums' types}}
  %r = whale.add_into_owners %g into %s to [0] over "replicas" : tensor<4xf32> into tensor<2xf32> -> tensor<2xf32>
  return
}

// -----

func.func @into_over_stages(%g: tensor<4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{adds over the replicas or the shard peers, not the stages}}
  %r = whale.add_into_owners %g into %s to [0] over "stages" : tensor<4xf32> into tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @broadcast_owned() {
  %w = whale.param "m/w" zeros [] {group = "replicas", owner = 1 : i64} : tensor<4x4xf32>
  // expected-error @+1 {{hands on 'm/w', which its owner alone keeps: it is gathered where read}}
  whale.broadcast %w from [1] over "replicas" : tensor<4x4xf32>
  return
}

// -----

// One bf16 flag a parameter.
func.func @bf16_flags() {
  %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
  // expected-error @+1 {{has 2 bf16 flags for 1 parameters: it needs one per parameter}}
  %g = whale.gather_params %w from [0] over "replicas" {bf16 = array<i1: true, false>} : tensor<4x4xf32>
  return
}
