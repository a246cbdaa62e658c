func.func @nested(%x: tensor<4xf32>) {
  whale.taskgraph replicate(2) {
    whale.taskgraph split(2) {
      whale.yield
    }
    whale.yield
  }
  return
}
