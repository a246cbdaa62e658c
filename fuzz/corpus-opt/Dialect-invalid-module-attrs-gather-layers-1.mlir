module attributes {whale.config = #whale.settings<shard_parameters = true, gather_layers = 4>} {}
