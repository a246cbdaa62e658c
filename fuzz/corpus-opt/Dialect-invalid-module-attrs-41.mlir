module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e9, contexts = 0>]>} {}
