"""Reads `safetensors-tool dump` of an imported checkpoint on stdin and
says whether the head (llama/proj_0/w, [D, V]) is the embedding
(llama/embed_0/table, [V, D]) transposed, value for value."""
import sys

tensors = {}
for line in sys.stdin:
    name, dtype, shape, *values = line.split()
    dims = [int(d) for d in shape.strip("[]").split(",")]
    tensors[name] = (dims, values)
(v, d), table = tensors["llama/embed_0/table"]
(d2, v2), head = tensors["llama/proj_0/w"]
same = (d, v) == (d2, v2) and all(
    head[c * v + r] == table[r * d + c] for r in range(v) for c in range(d))
print("the head is the embedding transposed" if same else "the head differs")
