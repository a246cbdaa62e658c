//===- HfExport.cpp - a Whale Llama checkpoint as Hugging Face's ----------===//
//
// The import read the other way: each parameter of the script's model at
// its place in transformers' LlamaForCausalLM (lib/api/HfLlamaNames.h),
// nn.proj's [in, out] transposed back to nn.Linear's [out, in], in fp32,
// and a config.json of what the script's weights and ops say.
//
//===----------------------------------------------------------------------===//

#include "whale/HuggingFace.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/api/HfLlamaFacts.h"
#include "lib/api/HfNames.h"
#include "lib/compile/ModelLookup.h"
#include "runtime/checkpoint/RankCheckpoint.h"
#include "runtime/store/Safetensors.h"
#include "support/OutputFile.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <filesystem>
#include <map>

namespace whale {

HfExportResult exportHuggingFace(Interpreter &interp,
                                 const HfExportOptions &options) {
  HfExportResult result;
  auto fail = [&](std::string msg) {
    result.error = std::move(msg);
    return result;
  };
  std::string error;
  mlir::func::FuncOp fn =
      findModel(interp, options.model, /*needsTrainBlock=*/false, error);
  if (!fn)
    return fail(error);
  const std::string model = fn.getName().str();

  // What the ops say, once for the whole model: a config holds one value.
  const LlamaOpFacts facts = llamaOpFacts(fn);
  if (facts.heads.size() != 1 || facts.thetas.size() != 1 ||
      facts.eps.size() != 1 || facts.scalings.size() != 1)
    return fail("a Hugging Face config holds one count of heads, one "
                "rope_theta, one rope scaling and one rms_norm_eps; model '" +
                model + "' has " + std::to_string(facts.heads.size()) + ", " +
                std::to_string(facts.thetas.size()) + ", " +
                std::to_string(facts.scalings.size()) + " and " +
                std::to_string(facts.eps.size()));

  // A single file (in bf16, widened to f32) or a folder of rank files,
  // each parameter put together whole.
  rt::Checkpoint ckpt;
  if (std::string err = loadWholeTensors(options.checkpoint, ckpt);
      !err.empty())
    return fail(err);
  if (ckpt.metadata["model"] != model)
    return fail("checkpoint '" + options.checkpoint + "' is of model '" +
                ckpt.metadata["model"] + "', not '" + model + "'");

  rt::Checkpoint out;
  out.metadata["format"] = "pt"; // what from_pretrained looks for
  int64_t vocab = 0, hidden = 0, mlp = 0, layers = 0;
  bool head = false;
  std::map<std::string, bool> seen;
  HfNames names;
  if (!options.names.empty() && !HfNames::read(options.names, names, error))
    return fail(error);
  std::map<std::string, std::string> whaleOf; // by transformers' name
  fn.walk([&](ParamOp p) {
    if (!error.empty() || seen[p.getName().str()])
      return;
    seen[p.getName().str()] = true;
    const std::string name = p.getName().str();
    std::optional<HfTensorPlace> place = names.place(model, name, error);
    const rt::StoredTensor *t = ckpt.find(name);
    const std::vector<int64_t> shape(p.getType().getShape());
    if (!error.empty())
      return;
    if (!place) {
      error = names.unknown(name) + ", so it has no place in a Hugging Face "
                                    "Llama";
      return;
    }
    if (auto [at, fresh] = whaleOf.try_emplace(place->name, name); !fresh) {
      error = "the script's '" + at->second + "' and '" + name +
              "' are both '" + place->name + "'";
      return;
    }
    if (!t || t->dtype != "F32" || t->shape != shape) {
      error = "checkpoint '" + options.checkpoint + "' has no F32 '" + name +
              "' of the script's shape";
      return;
    }
    rt::StoredTensor w{place->name, "F32", shape, t->data};
    if (place->transposed && shape.size() == 2) {
      w.shape = {shape[1], shape[0]};
      transposeInto(reinterpret_cast<const float *>(t->data.data()), shape[0],
                    shape[1], reinterpret_cast<float *>(w.data.data()));
    }
    head = head || place->name == "lm_head.weight";
    if (place->name == "model.embed_tokens.weight") {
      vocab = shape[0];
      hidden = shape[1];
    } else if (llvm::StringRef(place->name).ends_with("mlp.gate_proj.weight")) {
      mlp = shape[1];
    }
    if (llvm::StringRef(place->name).starts_with("model.layers.")) {
      const int64_t layer =
          std::stoll(place->name.substr(std::string("model.layers.").size()));
      layers = std::max(layers, layer + 1);
    }
    out.tensors.push_back(std::move(w));
  });
  if (!error.empty())
    return fail(error);
  // Without a head of its own, the model reads its table as the head: tied.
  if (!vocab || !mlp || !layers ||
      out.tensors.size() != (head ? 3 : 2) + 9 * size_t(layers))
    return fail("model '" + model + "' is not a whole Llama: an embedding, " +
                "blocks 0 to " + std::to_string(layers - 1) +
                " of nn.llama_block, a norm and a head (its own, or the "
                "embedding's table)");

  // config.json: transformers 4's keys, which transformers 5 reads too.
  const auto [heads, kvHeads] = *facts.heads.begin();
  const std::vector<double> &scaling = *facts.scalings.begin();
  auto tokens = mlir::dyn_cast<mlir::RankedTensorType>(
      fn.getNumArguments() ? fn.getArgumentTypes()[0] : mlir::Type());
  llvm::json::Object config{
      {"architectures", llvm::json::Array{"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"vocab_size", vocab},
      {"hidden_size", hidden},
      {"intermediate_size", mlp},
      {"num_hidden_layers", layers},
      {"num_attention_heads", heads},
      {"num_key_value_heads", kvHeads},
      {"head_dim", heads ? hidden / heads : 0},
      {"hidden_act", "silu"},
      {"max_position_embeddings",
       tokens && tokens.getRank() == 2 ? tokens.getDimSize(1) : 0},
      {"rms_norm_eps", *facts.eps.begin()},
      {"rope_theta", *facts.thetas.begin()},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"tie_word_embeddings", !head},
      {"torch_dtype", "float32"}};
  if (!scaling.empty())
    config["rope_scaling"] =
        llvm::json::Object{{"rope_type", "llama3"},
                           {"factor", scaling[0]},
                           {"low_freq_factor", scaling[1]},
                           {"high_freq_factor", scaling[2]},
                           {"original_max_position_embeddings", scaling[3]}};

  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(options.output, ec);
  if (ec)
    return fail("cannot make '" + options.output + "': " + ec.message());
  const fs::path dir(options.output);
  if (rt::Status st =
          rt::writeSafetensors((dir / "model.safetensors").string(), out);
      !st)
    return fail(st.message());
  std::string text =
      llvm::formatv("{0:2}", llvm::json::Value(std::move(config)));
  if (std::string err = rt::writeOutputFile((dir / "config.json").string(),
                                            text + "\n", "config.json");
      !err.empty())
    return fail(err);
  result.tensors = static_cast<int64_t>(out.tensors.size());
  result.ok = true;
  return result;
}

} // namespace whale
