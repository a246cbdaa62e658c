"""flops_per_token.py D HEADS KV_HEADS HIDDEN LAYERS VOCAB T < sim.json:
the FLOPs per token `whale sim --json` counts (model_flops_per_iteration
over the iteration's tokens) against 6N plus attention, by hand: N the
weights the matmuls read (each layer's q, k, v, o and SwiGLU projections,
and the untied head; the embedding is a lookup), attention's two products
per layer causal (half of T x T), times 3 for forward and backward.
Without recomputation. Prints the ratio."""
import json
import sys

d, heads, kv_heads, hidden, layers, vocab, t = map(int, sys.argv[1:8])
kv = d // heads * kv_heads
n = layers * (2 * d * d + 2 * d * kv + 3 * d * hidden) + d * vocab
attention = 2 * 2 * t * d * layers / 2  # per token, forward, causal
expected = 6 * n + 3 * attention
p = json.load(sys.stdin)
per_token = p["model_flops_per_iteration"] / (p["global_batch"] * t)
ratio = per_token / expected
print("flops per token %.4e, 6N + attention %.4e, ratio %.4f" %
      (per_token, expected, ratio))
# The norms, the activations and the softmax come on top: about 1%.
print("within 2%" if 1 <= ratio < 1.02 else "off by more than 2%")
