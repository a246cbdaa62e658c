"""Makes the fixture of llama-transformers.test with transformers itself.

A LlamaForCausalLM as small as a test can hold (vocabulary 256, hidden 32,
4 query and 2 key/value heads, SwiGLU 64, 2 layers, rope_theta 10000,
RMSNorm eps 1e-5, untied head) from a fixed seed, its norms' weights
drawn away from 1 so that they count. It writes, into fixture/:

- config.json and model.safetensors: the model as save_pretrained writes it
  (what a Hugging Face checkpoint is);
- tokens.bin: 65 uint16 token ids, four windows of 16 inputs and their
  next tokens (Whale's tokens() data reads windows of seq + 1);
- whale.safetensors: the same weights as a Whale checkpoint of
  tiny_llama.whl (names of the stdlib's llama parts, each nn.Linear's
  [out, in] weight transposed to Whale's [in, out]);
- expected.json: transformers' loss on the four windows, and again after
  one SGD step of lr 0.1 on them (torch's autograd gradient); and the
  greedy continuation generate(do_sample=False) gives the prompt "Whale "
  (its bytes are its token ids), 10 tokens, within the context of 16.

Run with PyTorch and transformers installed (a venv outside the repo; CI
never runs this, it reads what it wrote):

    python test/transformers/make_fixture.py
"""
import json
import os

import torch
import transformers
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixture")
VOCAB, HIDDEN, HEADS, KV_HEADS, MLP, LAYERS, T, BATCH = 256, 32, 4, 2, 64, 2, 16, 4
LR = 0.1


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=MLP,
        num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS, max_position_embeddings=64,
        rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
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
    model.save_pretrained(OUT, safe_serialization=True)

    gen = torch.Generator().manual_seed(1)
    stream = torch.randint(0, VOCAB, (BATCH * T + 1,), generator=gen)
    with open(os.path.join(OUT, "tokens.bin"), "wb") as f:
        f.write(stream.to(torch.int16).numpy().astype("<u2").tobytes())
    windows = torch.stack([stream[i * T:i * T + T + 1] for i in range(BATCH)])
    inputs, targets = windows[:, :-1], windows[:, 1:]

    # Whale's names for tiny_llama.whl's parameters (the stdlib's
    # llama_block: gqa_attention's proj_0..3 are q, k, v, o; swiglu's
    # proj_0..2 are gate, up, down).
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    whale = {"llama/embed_0/table": sd["model.embed_tokens.weight"],
             "llama/rmsnorm_0/weight": sd["model.norm.weight"],
             "llama/proj_0/w": sd["lm_head.weight"].t()}
    for i in range(LAYERS):
        hf, wh = f"model.layers.{i}.", f"llama/llama_block_{i}/"
        whale[wh + "rmsnorm_0/weight"] = sd[hf + "input_layernorm.weight"]
        whale[wh + "rmsnorm_1/weight"] = sd[hf + "post_attention_layernorm.weight"]
        for j, proj in enumerate(["q_proj", "k_proj", "v_proj", "o_proj"]):
            whale[wh + f"gqa_attention_0/proj_{j}/w"] = sd[hf + f"self_attn.{proj}.weight"].t()
        for j, proj in enumerate(["gate_proj", "up_proj", "down_proj"]):
            whale[wh + f"swiglu_0/proj_{j}/w"] = sd[hf + f"mlp.{proj}.weight"].t()
    save_file({k: v.contiguous().float() for k, v in whale.items()},
              os.path.join(OUT, "whale.safetensors"),
              metadata={"format": "whale-checkpoint-1", "model": "llama",
                        "seed": "0", "step": "0"})

    prompt = list(b"Whale ")
    with torch.no_grad():
        generated = model.generate(
            input_ids=torch.tensor([prompt]), max_new_tokens=10,
            do_sample=False, pad_token_id=0)[0].tolist()
    greedy = {"prompt": prompt, "continuation": generated[len(prompt):]}

    losses = []
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for _ in range(2):
        logits = model(input_ids=inputs).logits
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB), targets.reshape(-1))
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump({"losses": losses, "greedy": greedy,
                   "made_with": {"torch": torch.__version__,
                                 "transformers": transformers.__version__}},
                  f, indent=1)
        f.write("\n")
    print("losses", losses)


if __name__ == "__main__":
    main()
