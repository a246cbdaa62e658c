module attributes {whale.config = #whale.settings<shard_gradients = true, shard_group = 2>} {}
