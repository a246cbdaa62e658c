module attributes {whale.config = #whale.settings<num_microbatch = 4>} {}
