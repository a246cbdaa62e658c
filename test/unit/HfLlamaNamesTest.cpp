//===- HfLlamaNamesTest.cpp - Whale's Llama names in transformers' --------===//
//
// Every parameter the stdlib's Llama parts make has its place in a
// Hugging Face checkpoint, nn.Linear's weights transposed; names of other
// models, other parts or malformed block numbers have none.
//
//===----------------------------------------------------------------------===//

#include "lib/api/HfLlamaNames.h"

#include <gtest/gtest.h>

using whale::hfLlamaPlace;
using whale::HfTensorPlace;

namespace {

void expectPlace(const std::string &name, const std::string &hf,
                 bool transposed) {
  std::optional<HfTensorPlace> p = hfLlamaPlace("llama", name);
  ASSERT_TRUE(p.has_value()) << name;
  EXPECT_EQ(p->name, hf) << name;
  EXPECT_EQ(p->transposed, transposed) << name;
}

TEST(HfLlamaNames, EveryStdlibPartHasItsPlace) {
  expectPlace("llama/embed_0/table", "model.embed_tokens.weight", false);
  expectPlace("llama/rmsnorm_0/weight", "model.norm.weight", false);
  expectPlace("llama/proj_0/w", "lm_head.weight", true);
  // A tied model's own table, its embedding and its head.
  expectPlace("llama/table", "model.embed_tokens.weight", false);
  const std::string b = "llama/llama_block_17/", l = "model.layers.17.";
  expectPlace(b + "rmsnorm_0/weight", l + "input_layernorm.weight", false);
  expectPlace(b + "rmsnorm_1/weight", l + "post_attention_layernorm.weight",
              false);
  expectPlace(b + "gqa_attention_0/proj_0/w", l + "self_attn.q_proj.weight",
              true);
  expectPlace(b + "gqa_attention_0/proj_1/w", l + "self_attn.k_proj.weight",
              true);
  expectPlace(b + "gqa_attention_0/proj_2/w", l + "self_attn.v_proj.weight",
              true);
  expectPlace(b + "gqa_attention_0/proj_3/w", l + "self_attn.o_proj.weight",
              true);
  expectPlace(b + "swiglu_0/proj_0/w", l + "mlp.gate_proj.weight", true);
  expectPlace(b + "swiglu_0/proj_1/w", l + "mlp.up_proj.weight", true);
  expectPlace(b + "swiglu_0/proj_2/w", l + "mlp.down_proj.weight", true);
}

TEST(HfLlamaNames, Llama31BlocksHaveTheirPlaces) {
  const std::string b = "llama/llama31_block_2/", l = "model.layers.2.";
  expectPlace(b + "rmsnorm_0/weight", l + "input_layernorm.weight", false);
  expectPlace(b + "gqa_attention_scaled_0/proj_1/w",
              l + "self_attn.k_proj.weight", true);
  expectPlace(b + "swiglu_0/proj_2/w", l + "mlp.down_proj.weight", true);
  // Each block's own attention only.
  EXPECT_FALSE(hfLlamaPlace("llama", b + "gqa_attention_0/proj_1/w"));
  EXPECT_FALSE(hfLlamaPlace(
      "llama", "llama/llama_block_2/gqa_attention_scaled_0/proj_1/w"));
}

TEST(HfLlamaNames, OtherNamesHaveNone) {
  for (const char *name : {
           "gpt/embed_0/table",                            // another model
           "llama/embed_1/table",                          // a second table
           "llama/proj_1/w",                               // a second head
           "llama/llama_block_0/gqa_attention_0/proj_4/w", // no fifth
           "llama/llama_block_0/attention_0/linear_0/w",   // GPT's parts
           "llama/llama_block_/rmsnorm_0/weight",          // no number
           "llama/llama_block_01/rmsnorm_0/weight",        // not as Whale names
           "llama/llama_block_x1/rmsnorm_0/weight",
           "llama/llama_block_1234567890/rmsnorm_0/weight", // past any model
           "llama/llama_block_3",                           // no parameter
           "llama",
       })
    EXPECT_FALSE(hfLlamaPlace("llama", name).has_value()) << name;
}

} // namespace
