module attributes {whale.config = {num_micro_batch = 4}} {}
