func.func @split(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %g = whale.param "g" ones [] : tensor<16xf32>
    %b = whale.param "b" zeros [] : tensor<16xf32>
    %rm = whale.param "rm" zeros [] {frozen} : tensor<16xf32>
    %rv = whale.param "rv" ones [] {frozen} : tensor<16xf32>
    %y, %m, %s = whale.batch_norm %x, %g, %b, %rm, %rv momentum = 0.1 eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>
    %r = whale.reduce_mean %y axes = [0, 1] : tensor<8x16xf32> -> tensor<f32>
    whale.yield %r : tensor<f32>
  }
  return %l : tensor<f32>
}
