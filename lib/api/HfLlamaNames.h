//===- HfLlamaNames.h - Whale's Llama parameters in transformers' names -*-
// C++ -*-===//
//
// The stdlib builds a Llama (nn.embed, nn.llama_block, nn.rmsnorm, nn.proj,
// as examples/llama.whl writes it) whose parameters are named by the path
// of calls that made them; transformers' LlamaForCausalLM names the same
// weights by its modules. A model with a tied head makes its table itself,
// `table = param([V, D])`, read by embedding() and, transposed, as the
// head (test/transformers/tiny_llama_tied.whl). This is the one table
// between the two namings, read both ways (whale import, whale export).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_API_HFLLAMANAMES_H
#define WHALE_LIB_API_HFLLAMANAMES_H

#include <optional>
#include <string>

namespace whale {

/// Where a checkpoint of transformers' Llama keeps a parameter.
struct HfTensorPlace {
  std::string name;
  /// An nn.Linear weight, [out, in]: Whale's nn.proj holds [in, out].
  bool transposed = false;
};

/// The place of Whale parameter `name` of model `model`
/// ("llama/llama_block_3/gqa_attention_0/proj_1/w": model.layers.3.
/// self_attn.k_proj.weight, transposed); none when the name is not one the
/// stdlib's Llama parts make.
std::optional<HfTensorPlace> hfLlamaPlace(const std::string &model,
                                          const std::string &name);

} // namespace whale

#endif
