//===- whale/HuggingFace.h - checkpoints of Hugging Face transformers -*-
// C++ -*-===//
//
// Reads a Llama-family checkpoint as transformers writes it (config.json
// and model.safetensors, or shards named by model.safetensors.index.json)
// into a Whale checkpoint of a script's model, which `whale run --load`,
// `whale sample --load` and every plan then load as their own; and writes
// a Whale checkpoint back as one that transformers' from_pretrained loads:
//
//   whale import examples/llama.whl --hf Llama-3.2-1B -o llama.safetensors
//   whale export examples/llama.whl --load llama.safetensors --hf out/
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_HUGGINGFACE_H
#define WHALE_HUGGINGFACE_H

#include "whale/Interpreter.h"

#include <cstdint>
#include <string>

namespace whale {

struct HfImportOptions {
  std::string model;  ///< empty: the first model with a train block
  std::string source; ///< the folder holding config.json and the weights
  std::string output; ///< the Whale checkpoint to write (file or folder)
  /// A names file (lib/api/HfNames.h: the script's parameter names to
  /// transformers' ones) for a model of the script's own parts; empty: the
  /// stdlib's Llama parts.
  std::string names;
};

struct HfImportResult {
  bool ok = false;
  std::string error;
  int64_t tensors = 0;    ///< parameters written
  int64_t parameters = 0; ///< their elements
};

/// Writes the checkpoint's weights as a Whale checkpoint of the loaded
/// script's model, at its first step (optimizer state zero, the train
/// block's seed). The script must build the model of the stdlib's parts
/// (nn.embed, nn.llama_block, nn.rmsnorm, nn.proj, as examples/llama.whl
/// does) with the checkpoint's shapes: every parameter is found, every
/// weight of the checkpoint placed, and the heads, key and value heads,
/// rope_theta (and Llama 3.1's rope_scaling) and rms_norm_eps of
/// config.json are the script's, or the import fails saying which differs.
HfImportResult importHuggingFace(Interpreter &interp,
                                 const HfImportOptions &options);

/// Whether `path` is a Hugging Face checkpoint folder (config.json beside
/// model.safetensors or model.safetensors.index.json) rather than a Whale
/// checkpoint: what `whale run --load` and `whale sample --load` import
/// first.
bool isHuggingFaceFolder(const std::string &path);

struct HfExportOptions {
  std::string model;      ///< empty: the first model with a train block
  std::string checkpoint; ///< the Whale checkpoint (one file) to read
  std::string output;     ///< the folder to write config.json and weights in
  std::string names;      ///< as HfImportOptions::names
};

struct HfExportResult {
  bool ok = false;
  std::string error;
  int64_t tensors = 0; ///< weights written
};

/// Writes the checkpoint's parameters of the loaded script's model as
/// transformers' LlamaForCausalLM keeps them (model.safetensors, fp32,
/// nn.Linear's [out, in]) with the config.json that describes the script:
/// sizes from the weights, heads, rope_theta, rope_scaling and
/// rms_norm_eps from its ops, max_position_embeddings its context. The
/// script is built of the stdlib's parts, as importHuggingFace needs.
HfExportResult exportHuggingFace(Interpreter &interp,
                                 const HfExportOptions &options);

} // namespace whale

#endif
