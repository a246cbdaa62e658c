module attributes {whale.config = #whale.settings<shard_group = 2>} {}
