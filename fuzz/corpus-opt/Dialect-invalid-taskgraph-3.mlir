func.func @block_args() {
  "whale.taskgraph"() <{strategy = #whale<strategy replicate>}> ({
  ^bb0(%a: tensor<4xf32>):
    whale.yield
  }) : () -> ()
  return
}
