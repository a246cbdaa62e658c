module attributes {whale.config = #whale.settings<shard_parameters = true>} {
  func.func @m() attributes {whale.gather_layers = 0 : i64} { return }
}
