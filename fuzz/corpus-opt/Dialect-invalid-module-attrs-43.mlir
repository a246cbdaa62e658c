func.func private @m(%x: tensor<4xf32>) -> tensor<f32> attributes {whale.model}
