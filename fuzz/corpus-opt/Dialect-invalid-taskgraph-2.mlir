func.func @no_yield(%x: tensor<4xf32>) {
  "whale.taskgraph"() <{strategy = #whale<strategy replicate>}> ({
    %p = whale.param "p" zeros [] : tensor<4xf32>
  }) : () -> ()
  return
}
