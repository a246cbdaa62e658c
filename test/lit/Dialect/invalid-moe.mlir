// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @slots(%x: tensor<2x6x8xf32>, %e: tensor<2x6x2xi32>) {
  // expected-error @+1 {{slots}}
  %d = whale.moe_dispatch %x, %e experts = 4 capacity = 3 : tensor<2x6x8xf32>, tensor<2x6x2xi32> -> tensor<4x5x8xf32>
  return
}

// -----

func.func @choices(%x: tensor<2x6x8xf32>, %e: tensor<2x6x3xi32>) {
  // expected-error @+1 {{each token chooses from 1 to 2 experts, got 3}}
  %d = whale.moe_dispatch %x, %e experts = 2 capacity = 3 : tensor<2x6x8xf32>, tensor<2x6x3xi32> -> tensor<2x6x8xf32>
  return
}

// -----

func.func @routes(%x: tensor<2x6x8xf32>, %e: tensor<2x5x2xi32>) {
  // expected-error @+1 {{do not route the tokens}}
  %d = whale.moe_dispatch %x, %e experts = 4 capacity = 3 : tensor<2x6x8xf32>, tensor<2x5x2xi32> -> tensor<4x6x8xf32>
  return
}

// -----

func.func @capacity(%x: tensor<2x6x8xf32>, %e: tensor<2x6x2xi32>) {
  // expected-error @+1 {{needs at least one expert and one slot}}
  %d = whale.moe_dispatch %x, %e experts = 4 capacity = 0 : tensor<2x6x8xf32>, tensor<2x6x2xi32> -> tensor<4x0x8xf32>
  return
}

// -----

func.func @gates(%h: tensor<4x6x8xf32>, %e: tensor<2x6x2xi32>, %g: tensor<2x6x1xf32>) {
  // expected-error @+1 {{gates}}
  %y = whale.moe_combine %h, %e, %g : tensor<4x6x8xf32>, tensor<2x6x2xi32>, tensor<2x6x1xf32> -> tensor<2x6x8xf32>
  return
}

// -----

func.func @shares(%h: tensor<4x7x8xf32>, %e: tensor<2x6x2xi32>) {
  // expected-error @+1 {{are not 2 groups' equal shares}}
  %y = whale.moe_combine %h, %e : tensor<4x7x8xf32>, tensor<2x6x2xi32> -> tensor<2x6x8xf32>
  return
}

// -----

func.func @dgates(%y: tensor<2x6x8xf32>, %h: tensor<4x6x8xf32>, %e: tensor<2x6x2xi32>) {
  // expected-error @+1 {{dgates}}
  %g = whale.moe_gate_grad %y, %h, %e : tensor<2x6x8xf32>, tensor<4x6x8xf32>, tensor<2x6x2xi32> -> tensor<2x6x1xf32>
  return
}

// -----

func.func @hot(%e: tensor<2x6xi32>) {
  // expected-error @+1 {{result}}
  %h = whale.one_hot %e classes = 4 : tensor<2x6xi32> -> tensor<2x6x3xf32>
  return
}
