module attributes {whale.config = #whale.settings<num_micro_batch = 0>} {}
