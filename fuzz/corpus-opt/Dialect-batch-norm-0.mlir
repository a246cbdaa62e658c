func.func @batch_norm(%x: tensor<8x4x6x6xf32>, %f: tensor<8x4xf32>, %dy: tensor<8x4x6x6xf32>) -> tensor<8x4x6x6xf32> {
  %g = whale.param "bn/gamma" ones [] : tensor<4xf32>
  %b = whale.param "bn/beta" zeros [] : tensor<4xf32>
  %rm = whale.param "bn/running_mean" zeros [] {frozen} : tensor<4xf32>
  %rv = whale.param "bn/running_var" ones [] {frozen} : tensor<4xf32>
  %y, %m, %s = whale.batch_norm %x, %g, %b, %rm, %rv momentum = 0.1 eps = 1.0e-5 : tensor<8x4x6x6xf32>, tensor<4xf32>
  %y2, %m2, %s2 = whale.batch_norm %f, %g, %b, %rm, %rv momentum = 0.0 eps = 1.0e-3 {row_copies = 2} : tensor<8x4xf32>, tensor<4xf32>
  %dx, %dg, %db = whale.batch_norm_grad %x, %g, %m, %s, %dy : tensor<8x4x6x6xf32>, tensor<4xf32>
  return %dx : tensor<8x4x6x6xf32>
}
