//===- HfNames.h - a script's own table of transformers' names --*- C++ -*-===//
//
// A model built of the stdlib's Llama parts has its names in
// HfLlamaNames.h. A model of the script's own defs names its parameters by
// its own calls; a names file says which of transformers' weights each is:
// a JSON object whose keys are the script's parameter names (as its
// checkpoints write them) and whose values are transformers' names, or
// objects {"hf": NAME, "transposed": true} for an nn.Linear weight, which
// Whale's matmul reads [in, out]. `{i}` in a key stands for a layer's
// number (decimal, no leading zero) and is the same number in its value:
//
//   {"llama/tok/table": "model.embed_tokens.weight",
//    "llama/layer_{i}/attn/q/w": {"hf":
//    "model.layers.{i}.self_attn.q_proj.weight",
//                                 "transposed": true}}
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_API_HFNAMES_H
#define WHALE_LIB_API_HFNAMES_H

#include "lib/api/HfLlamaNames.h"

#include <optional>
#include <string>
#include <vector>

namespace whale {

class HfNames {
public:
  /// The stdlib's table (hfLlamaPlace).
  HfNames() = default;
  /// The rules of names file `text` (`file` names it in errors); false
  /// with `error` (the file, the key and what is wrong) where it is not
  /// one.
  static bool parse(const std::string &text, const std::string &file,
                    HfNames &out, std::string &error);
  /// As parse, reading `path`.
  static bool read(const std::string &path, HfNames &out, std::string &error);

  /// Where transformers keeps parameter `name` of model `model`; none where
  /// no rule (or the stdlib's table) names it, or (with `error`) where two
  /// rules do.
  std::optional<HfTensorPlace> place(const std::string &model,
                                     const std::string &name,
                                     std::string &error) const;
  /// What a parameter no rule names is told: which table was read.
  std::string unknown(const std::string &name) const;

private:
  struct Rule {
    std::string key;               ///< as written, for errors
    std::string before, after;     ///< the key around `{i}` (all: before)
    std::string hfBefore, hfAfter; ///< the value around `{i}`
    bool indexed = false, transposed = false;
  };
  std::string file; ///< empty: the stdlib's table
  std::vector<Rule> rules;
};

} // namespace whale

#endif
