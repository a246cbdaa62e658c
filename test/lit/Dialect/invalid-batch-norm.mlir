// RUN: whale-opt %s --split-input-file --verify-diagnostics

func.func @rank(%x: tensor<8xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{needs [N, C, ...] (rank >= 2), got 'tensor<8xf32>'}}
  %y, %m, %s = whale.batch_norm %x, %c, %c, %c, %c momentum = 0.1 eps = 1.0e-5 : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @channels(%x: tensor<8x4x2x2xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{gamma should have shape [4] but has 'tensor<3xf32>'}}
  %y, %m, %s = whale.batch_norm %x, %c, %c, %c, %c momentum = 0.1 eps = 1.0e-5 : tensor<8x4x2x2xf32>, tensor<3xf32>
  return
}

// -----

func.func @momentum(%x: tensor<8x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{momentum must be in [0, 1], got 1.5}}
  %y, %m, %s = whale.batch_norm %x, %c, %c, %c, %c momentum = 1.5 eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @eps(%x: tensor<8x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{eps must be positive}}
  %y, %m, %s = whale.batch_norm %x, %c, %c, %c, %c momentum = 0.1 eps = 0.0 : tensor<8x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @copies(%x: tensor<8x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{row_copies must be >= 1}}
  %y, %m, %s = whale.batch_norm %x, %c, %c, %c, %c momentum = 0.1 eps = 1.0e-5 {row_copies = 0} : tensor<8x4xf32>, tensor<4xf32>
  return
}

// -----

// The running statistics are written in place: a trained parameter is not.
func.func @trained(%x: tensor<8x4xf32>, %c: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  // expected-error @+1 {{running_var must be a frozen parameter (state no gradient trains), not 'w'}}
  %y, %m, %s = whale.batch_norm %x, %c, %c, %c, %w momentum = 0.1 eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32>
  return
}

// -----

func.func @grad(%x: tensor<8x4xf32>, %c: tensor<5xf32>, %dy: tensor<8x4xf32>) {
  // expected-error @+1 {{gamma should have shape [4] but has 'tensor<5xf32>'}}
  %dx, %dg, %db = whale.batch_norm_grad %x, %c, %c, %c, %dy : tensor<8x4xf32>, tensor<5xf32>
  return
}
