module attributes {whale.config = #whale.settings<num_micro_batch = 2, num_micro_batch = 4>} {}
