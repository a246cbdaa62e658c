"""Makes the fixture of llama-transformers.test with transformers itself.

LlamaForCausalLMs as small as a test can hold (vocabulary 256, 2 layers,
RMSNorm eps 1e-5; grouped-query, multi-query and multi-head attention,
rope_theta 10000 and 500000, Llama 3.1's rope scaling, head widths 8 and
12, untied and tied heads: FIXTURES) from a fixed seed, their norms' weights drawn away from 1 so that
they count. Each writes, into its folder (fixture/, fixture-mqa/,
fixture-mha/, fixture-tied/, fixture-llama31/):

- config.json and model.safetensors: the model as save_pretrained writes it
  (what a Hugging Face checkpoint is);
- tokens.bin: 65 uint16 token ids, four windows of 16 inputs and their
  next tokens (Whale's tokens() data reads windows of seq + 1);
- whale.safetensors: the same weights as a Whale checkpoint of
  tiny_llama.whl or tiny_llama_tied.whl (names of the stdlib's llama
  parts, each nn.Linear's [out, in] weight transposed to Whale's [in, out]);
- whale-step1.safetensors: the weights after one SGD step of lr 100
  (GRAD_LR) on the windows, as a Whale checkpoint: every gradient, as the
  step moved it;
- expected.json: transformers' loss on the four windows, and again after
  one SGD step of lr 0.1 on them (torch's autograd gradient); and the
  greedy continuation generate(do_sample=False) gives the prompt "Whale "
  (its bytes are its token ids), 10 tokens, within the context of 16.

Run with PyTorch and transformers installed (a venv outside the repo; CI
never runs this, it reads what it wrote):

    python test/transformers/make_fixture.py
"""
import copy
import json
import os

import torch
import transformers
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB, LAYERS, T, BATCH = 256, 2, 16, 4
LR = 0.1
# The step whale-step1.safetensors takes: large, so that what it moves
# stands far above the f32 rounding of the weights it moves (a step of 0.1
# moves an embedding row by 1e-3, within 2e-4 of that rounding).
GRAD_LR = 100.0
# Each fixture: its folder, and hidden size, query heads, key/value heads,
# SwiGLU width and rope_theta (tiny_llama.whl's D, HEADS, KV_HEADS, HIDDEN
# and THETA), whether the head is the embedding (tiny_llama_tied.whl), and
# Llama 3.1's rope scaling or none (tiny_llama31.whl).
LLAMA31_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0,
                   # Below the context of 16, so that every frequency of
                   # the head width of 8 is scaled or smoothed.
                   "original_max_position_embeddings": 8}
FIXTURES = [
    # Grouped-query attention, two query heads a key head.
    ("fixture", 32, 4, 2, 64, 10000.0, False, None),
    # Multi-query attention, Llama 3's theta, a head width of 12.
    ("fixture-mqa", 48, 4, 1, 96, 500000.0, False, None),
    # Multi-head attention: a key head for each query head.
    ("fixture-mha", 32, 4, 4, 64, 10000.0, False, None),
    # The head tied to the embedding, as Llama 3.2 1B's.
    ("fixture-tied", 32, 4, 2, 64, 10000.0, True, None),
    # Llama 3.1's rope frequency scaling.
    ("fixture-llama31", 32, 4, 2, 64, 10000.0, False, LLAMA31_SCALING),
]


def whale_tensors(model, layers, tied, scaled):
    """The model's weights named as tiny_llama.whl's parameters (the
    stdlib's llama_block: gqa_attention's proj_0..3 are q, k, v, o;
    swiglu's proj_0..2 are gate, up, down), each nn.Linear's [out, in]
    transposed to Whale's [in, out]; tied, as tiny_llama_tied.whl's (its
    own table, no head); scaled, as tiny_llama31.whl's (llama31_block,
    gqa_attention_scaled)."""
    block = "llama31_block" if scaled else "llama_block"
    attention = "gqa_attention_scaled_0" if scaled else "gqa_attention_0"
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    whale = {"llama/rmsnorm_0/weight": sd["model.norm.weight"]}
    if tied:
        whale["llama/table"] = sd["model.embed_tokens.weight"]
    else:
        whale["llama/embed_0/table"] = sd["model.embed_tokens.weight"]
        whale["llama/proj_0/w"] = sd["lm_head.weight"].t()
    for i in range(layers):
        hf, wh = f"model.layers.{i}.", f"llama/{block}_{i}/"
        whale[wh + "rmsnorm_0/weight"] = sd[hf + "input_layernorm.weight"]
        whale[wh + "rmsnorm_1/weight"] = sd[hf + "post_attention_layernorm.weight"]
        for j, proj in enumerate(["q_proj", "k_proj", "v_proj", "o_proj"]):
            whale[wh + f"{attention}/proj_{j}/w"] = sd[hf + f"self_attn.{proj}.weight"].t()
        for j, proj in enumerate(["gate_proj", "up_proj", "down_proj"]):
            whale[wh + f"swiglu_0/proj_{j}/w"] = sd[hf + f"mlp.{proj}.weight"].t()
    return {k: v.contiguous().float() for k, v in whale.items()}


def save_whale(tensors, path, step):
    save_file(tensors, path, metadata={"format": "whale-checkpoint-1",
                                       "model": "llama", "seed": "0",
                                       "step": str(step)})


def make(folder, hidden, heads, kv_heads, mlp, theta, tied, scaling):
    out = os.path.join(HERE, folder)
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=hidden, intermediate_size=mlp,
        num_hidden_layers=LAYERS, num_attention_heads=heads,
        num_key_value_heads=kv_heads, max_position_embeddings=64,
        rope_theta=theta, rope_scaling=scaling, rms_norm_eps=1e-5,
        tie_word_embeddings=tied,
        attention_bias=False, mlp_bias=False, torch_dtype="float32",
        bos_token_id=None, eos_token_id=None, pad_token_id=None)
    model = transformers.LlamaForCausalLM(config).float().eval()
    # Weights large enough that every part moves the loss: unit-variance
    # embeddings, projections of gain 2 (so attention's scores spread and
    # the rotation's angles matter), norms' weights away from 1. With
    # transformers' default init (std 0.02) the loss is log(256) to 1e-5
    # whatever the attention does.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif name.endswith("embed_tokens.weight"):
                p.normal_(0, 1)
            else:
                p.normal_(0, 2 / p.shape[1] ** 0.5)
    model.save_pretrained(out, safe_serialization=True)

    gen = torch.Generator().manual_seed(1)
    stream = torch.randint(0, VOCAB, (BATCH * T + 1,), generator=gen)
    with open(os.path.join(out, "tokens.bin"), "wb") as f:
        f.write(stream.to(torch.int16).numpy().astype("<u2").tobytes())
    windows = torch.stack([stream[i * T:i * T + T + 1] for i in range(BATCH)])
    inputs, targets = windows[:, :-1], windows[:, 1:]
    save_whale(whale_tensors(model, LAYERS, tied, scaling is not None),
               os.path.join(out, "whale.safetensors"), 0)

    prompt = list(b"Whale ")
    with torch.no_grad():
        generated = model.generate(
            input_ids=torch.tensor([prompt]), max_new_tokens=10,
            do_sample=False, pad_token_id=0)[0].tolist()
    greedy = {"prompt": prompt, "continuation": generated[len(prompt):]}

    losses = []
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(2):
        logits = model(input_ids=inputs).logits
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB), targets.reshape(-1))
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        if step == 0:
            # Every gradient, as one SGD step of GRAD_LR moves the weights.
            moved = copy.deepcopy(model)
            with torch.no_grad():
                for p, q in zip(moved.parameters(), model.parameters()):
                    p.copy_(q - GRAD_LR * q.grad)
            save_whale(whale_tensors(moved, LAYERS, tied, scaling is not None),
                       os.path.join(out, "whale-step1.safetensors"), 1)
        optimizer.step()
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"losses": losses, "greedy": greedy,
                   "made_with": {"torch": torch.__version__,
                                 "transformers": transformers.__version__}},
                  f, indent=1)
        f.write("\n")
    print(folder, "losses", losses)


def main():
    for fixture in FIXTURES:
        make(*fixture)


if __name__ == "__main__":
    main()
