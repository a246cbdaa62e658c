//===- HfLlamaNames.cpp - Whale's Llama parameters in transformers' names -===//

#include "lib/api/HfLlamaNames.h"

#include <cstdlib>

namespace whale {
namespace {

/// `s` without `prefix`, or none when it does not start so.
std::optional<std::string> after(const std::string &s,
                                 const std::string &prefix) {
  if (s.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  return s.substr(prefix.size());
}

/// A block's parameter, its path below `llama_block_<i>/`, where the
/// block's attention is the def `attention` (its call's path: gqa_attention_0
/// or gqa_attention_scaled_0).
std::optional<HfTensorPlace> blockPlace(const std::string &layer,
                                        const std::string &rest,
                                        const std::string &attention) {
  struct Row {
    std::string whale;
    const char *hf;
    bool transposed;
  };
  // The attention's projections in the order it makes them (q, k, v, o);
  // swiglu's (gate, up, down).
  const Row rows[] = {
      {"rmsnorm_0/weight", "input_layernorm.weight", false},
      {attention + "/proj_0/w", "self_attn.q_proj.weight", true},
      {attention + "/proj_1/w", "self_attn.k_proj.weight", true},
      {attention + "/proj_2/w", "self_attn.v_proj.weight", true},
      {attention + "/proj_3/w", "self_attn.o_proj.weight", true},
      {"rmsnorm_1/weight", "post_attention_layernorm.weight", false},
      {"swiglu_0/proj_0/w", "mlp.gate_proj.weight", true},
      {"swiglu_0/proj_1/w", "mlp.up_proj.weight", true},
      {"swiglu_0/proj_2/w", "mlp.down_proj.weight", true},
  };
  for (const Row &r : rows)
    if (rest == r.whale)
      return HfTensorPlace{"model.layers." + layer + "." + r.hf, r.transposed};
  return std::nullopt;
}

} // namespace

std::optional<HfTensorPlace> hfLlamaPlace(const std::string &model,
                                          const std::string &name) {
  std::optional<std::string> own = after(name, model + "/");
  if (!own)
    return std::nullopt;
  // nn.embed's table, or a tied model's own `table`, which the script
  // reads as the embedding and as the head (tie_word_embeddings).
  if (*own == "embed_0/table" || *own == "table")
    return HfTensorPlace{"model.embed_tokens.weight", false};
  if (*own == "rmsnorm_0/weight")
    return HfTensorPlace{"model.norm.weight", false};
  if (*own == "proj_0/w")
    return HfTensorPlace{"lm_head.weight", true};
  // nn.llama_block, or nn.llama31_block with its scaled rope.
  struct Kind {
    const char *block, *attention;
  };
  static const Kind kinds[] = {{"llama_block_", "gqa_attention_0"},
                               {"llama31_block_", "gqa_attention_scaled_0"}};
  for (const Kind &k : kinds) {
    std::optional<std::string> block = after(*own, k.block);
    if (!block)
      continue;
    const size_t slash = block->find('/');
    const std::string layer = block->substr(0, slash);
    if (slash == std::string::npos || layer.empty() || layer.size() > 9 ||
        layer.find_first_not_of("0123456789") != std::string::npos ||
        (layer.size() > 1 && layer[0] == '0'))
      return std::nullopt;
    return blockPlace(layer, block->substr(slash + 1), k.attention);
  }
  return std::nullopt;
}

} // namespace whale
