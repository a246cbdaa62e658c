module attributes {whale.config = #whale.settings<shard_parameters = true, gather_every = "step">} {
  func.func @m() attributes {whale.gather_every = "often"} { return }
}
