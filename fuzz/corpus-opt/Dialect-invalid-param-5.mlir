func.func @dynamic() {
  %0 = whale.param "p" zeros [] : tensor<?x4xf32>
  return
}
