//===- HfImport.cpp - a Hugging Face Llama checkpoint as Whale's ---------===//
//
// Reads config.json and the safetensors weights (one file, or the shards
// model.safetensors.index.json names), places each weight at the script's
// parameter of the same meaning (lib/api/HfLlamaNames.h), in fp32 (bf16 and
// fp16 widened exactly), nn.Linear's [out, in] transposed to Whale's
// [in, out], and writes a Whale checkpoint at step 0 with the optimizer's
// state zero: what a run of the script would hold before its first step.
// What the weights cannot say (heads, key and value heads, rope_theta and
// rope_scaling, rms_norm_eps) is compared with the script's ops.
//
//===----------------------------------------------------------------------===//

#include "whale/HuggingFace.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/api/HfLlamaFacts.h"
#include "lib/api/HfNames.h"
#include "lib/compile/ModelLookup.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/store/Safetensors.h"
#include "support/InputFile.h"

#include "llvm/Support/JSON.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

namespace whale {
namespace {

namespace fs = std::filesystem;

std::string shapeText(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// A JSON file of the checkpoint (config.json, the shards' index), parsed;
/// "" or why it cannot be read. Read as every file a user names is (a
/// regular file, bounded; nesting bounded before the parser recurses).
std::string readJson(const fs::path &file, llvm::json::Value &out) {
  std::string text;
  if (std::string err =
          rt::readRegularFile(file.string(), "the Hugging Face checkpoint's",
                              rt::kMaxTextInput, text);
      !err.empty())
    return err;
  if (!rt::jsonDepthWithin(text, rt::kMaxJsonDepth))
    return file.string() + ": nested more than " +
           std::to_string(rt::kMaxJsonDepth) + " levels deep";
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
  if (!v)
    return file.string() + ": " + llvm::toString(v.takeError());
  out = std::move(*v);
  return "";
}

/// The safetensors files holding the weights: model.safetensors, or the
/// shards its index names.
std::string weightFiles(const fs::path &dir, std::vector<fs::path> &files) {
  if (fs::exists(dir / "model.safetensors")) {
    files = {dir / "model.safetensors"};
    return "";
  }
  const fs::path index = dir / "model.safetensors.index.json";
  if (!fs::exists(index))
    return dir.string() + " has neither model.safetensors nor "
                          "model.safetensors.index.json";
  llvm::json::Value v = nullptr;
  if (std::string err = readJson(index, v); !err.empty())
    return err;
  const llvm::json::Object *map =
      v.getAsObject() ? v.getAsObject()->getObject("weight_map") : nullptr;
  if (!map)
    return index.string() + " has no weight_map";
  std::set<std::string> names;
  for (const auto &kv : *map) {
    std::optional<llvm::StringRef> f = kv.second.getAsString();
    if (!f || f->contains('/') || f->contains('\\') || *f == "..")
      return index.string() + ": '" + kv.first.str() +
             "' names no file of the folder";
    names.insert(f->str());
  }
  for (const std::string &n : names)
    files.push_back(dir / n);
  return "";
}

/// What config.json says that the weights do not, against the script's
/// ops: the first difference, or "".
std::string checkConfig(const llvm::json::Object &config,
                        mlir::func::FuncOp fn) {
  std::optional<llvm::StringRef> type = config.getString("model_type");
  if (!type || (*type != "llama" && *type != "mistral"))
    return "config.json's model_type is '" +
           (type ? type->str() : std::string("none")) +
           "': Whale reads Llama-family checkpoints (llama, mistral)";
  if (config.getBoolean("attention_bias").value_or(false) ||
      config.getBoolean("mlp_bias").value_or(false))
    return "config.json asks for biases in attention or the MLP, which "
           "nn.llama_block has not";
  if (std::optional<llvm::StringRef> act = config.getString("hidden_act");
      act && *act != "silu")
    return "config.json's hidden_act is '" + act->str() +
           "': nn.llama_block's MLP is SwiGLU (silu)";
  const int64_t hidden = config.getInteger("hidden_size").value_or(0);
  const int64_t qHeads = config.getInteger("num_attention_heads").value_or(0);
  if (std::optional<int64_t> headDim = config.getInteger("head_dim");
      headDim && qHeads > 0 && *headDim * qHeads != hidden)
    return "config.json's head_dim " + std::to_string(*headDim) +
           " is not hidden_size / num_attention_heads (" +
           std::to_string(hidden) + " / " + std::to_string(qHeads) +
           "), as nn.gqa_attention's heads are";
  const LlamaOpFacts facts = llamaOpFacts(fn);
  auto differs = [](double a, double b) {
    return std::abs(a - b) > 1e-9 * std::max(std::abs(a), std::abs(b));
  };
  const int64_t kvHeads =
      config.getInteger("num_key_value_heads").value_or(qHeads);
  for (auto [q, k] : facts.heads)
    if (q != qHeads || k != kvHeads)
      return "the script's attention has " + std::to_string(q) + " query and " +
             std::to_string(k) +
             " key heads; config.json's num_attention_heads is " +
             std::to_string(qHeads) + " and num_key_value_heads " +
             std::to_string(kvHeads);
  // transformers 5 keeps the rotary settings in rope_parameters; earlier
  // versions in rope_theta and rope_scaling.
  const llvm::json::Object *rope = config.getObject("rope_parameters");
  const double theta =
      (rope ? rope->getNumber("rope_theta") : std::nullopt)
          .value_or(config.getNumber("rope_theta").value_or(10000.0));
  for (double t : facts.thetas)
    if (differs(t, theta))
      return "the script's rope theta is " + std::to_string(t) +
             "; config.json's rope_theta is " + std::to_string(theta);
  std::vector<double> want;
  const llvm::json::Object *s = config.getObject("rope_scaling");
  if (!s)
    s = rope;
  if (s) {
    std::optional<llvm::StringRef> kind = s->getString("rope_type");
    if (!kind)
      kind = s->getString("type");
    if (kind && *kind != "default") {
      if (*kind != "llama3")
        return "config.json's rope_scaling is '" + kind->str() +
               "': Whale's rope knows Llama 3.1's ('llama3')";
      want = {s->getNumber("factor").value_or(0),
              s->getNumber("low_freq_factor").value_or(0),
              s->getNumber("high_freq_factor").value_or(0),
              s->getNumber("original_max_position_embeddings").value_or(0)};
    }
  }
  for (const std::vector<double> &got : facts.scalings) {
    bool same = got.size() == want.size();
    for (size_t i = 0; same && i < got.size(); ++i)
      same = !differs(got[i], want[i]);
    if (!same)
      return want.empty() ? std::string("the script's rope scales its "
                                        "frequencies; config.json has no "
                                        "llama3 rope_scaling")
                          : std::string("the script's rope does not scale "
                                        "its frequencies as config.json's "
                                        "llama3 rope_scaling does (factor, "
                                        "low_freq_factor, high_freq_factor, "
                                        "original_max_position_embeddings)");
  }
  const double wantEps = config.getNumber("rms_norm_eps").value_or(1e-6);
  for (double e : facts.eps)
    if (differs(e, wantEps))
      return "the script's rms_norm eps is " + std::to_string(e) +
             "; config.json's rms_norm_eps is " + std::to_string(wantEps);
  return "";
}

} // namespace

bool isHuggingFaceFolder(const std::string &path) {
  std::error_code ec;
  const fs::path dir(path);
  return fs::is_directory(dir, ec) &&
         fs::is_regular_file(dir / "config.json", ec) &&
         (fs::is_regular_file(dir / "model.safetensors", ec) ||
          fs::is_regular_file(dir / "model.safetensors.index.json", ec));
}

HfImportResult importHuggingFace(Interpreter &interp,
                                 const HfImportOptions &options) {
  HfImportResult result;
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
  const fs::path dir(options.source);
  llvm::json::Value configValue = nullptr;
  if (std::string err = readJson(dir / "config.json", configValue);
      !err.empty())
    return fail(err);
  const llvm::json::Object *config = configValue.getAsObject();
  if (!config)
    return fail((dir / "config.json").string() + " is not a JSON object");
  if (std::string err = checkConfig(*config, fn); !err.empty())
    return fail(options.source + ": " + err);

  // The script's parameters, in the order its model makes them.
  std::vector<Parameter> params;
  std::set<std::string> seen;
  fn.walk([&](ParamOp p) {
    if (seen.insert(p.getName().str()).second)
      params.push_back(
          {p.getName().str(), std::vector<int64_t>(p.getType().getShape())});
  });
  HfNames names;
  if (!options.names.empty() && !HfNames::read(options.names, names, error))
    return fail(error);
  std::map<std::string, const Parameter *> wanted; // by the checkpoint's name
  std::map<std::string, bool> transposed;
  std::map<std::string, std::string> hfOf; // by Whale's name
  for (const Parameter &p : params) {
    std::optional<HfTensorPlace> place = names.place(model, p.name, error);
    if (!error.empty())
      return fail(error);
    if (!place)
      return fail(names.unknown(p.name) +
                  ", so no weight of a Hugging Face Llama is known to be it");
    if (auto twice = wanted.find(place->name); twice != wanted.end())
      return fail("the script's '" + twice->second->name + "' and '" + p.name +
                  "' are both '" + place->name + "'");
    wanted[place->name] = &p;
    transposed[place->name] = place->transposed;
    hfOf[p.name] = place->name;
  }
  const bool tied = config->getBoolean("tie_word_embeddings").value_or(false);

  std::vector<fs::path> files;
  if (std::string err = weightFiles(dir, files); !err.empty())
    return fail(err);
  rt::Checkpoint out;
  out.metadata["format"] = "whale-checkpoint-1";
  out.metadata["model"] = model;
  out.metadata["step"] = "0";
  out.metadata["seed"] = std::to_string(TrainBlock::of(fn).seed);
  const int states = optimizerStateCount(fn);
  std::map<std::string, rt::StoredTensor> placed; // by Whale's name
  for (const fs::path &file : files) {
    rt::Checkpoint shard;
    if (rt::Status st = rt::readSafetensors(file.string(), shard); !st)
      return fail(st.message());
    // bf16 and fp16 (as checkpoints are published) widened exactly.
    rt::widenFloatTensors(shard);
    for (rt::StoredTensor &t : shard.tensors) {
      // Older checkpoints keep the rotary frequencies, which Whale
      // computes from rope_theta.
      if (llvm::StringRef(t.name).ends_with("rotary_emb.inv_freq"))
        continue;
      // A tied checkpoint may store the head too, the embedding again; a
      // tied script has no head of its own to take it.
      if (tied && t.name == "lm_head.weight" && !wanted.count(t.name))
        continue;
      const std::string &name = t.name;
      auto at = wanted.find(name);
      if (at == wanted.end())
        return fail(file.string() + ": '" + t.name +
                    "' has no place in the script's model '" + model +
                    "' (more layers than its blocks, or a part it lacks)");
      const Parameter &p = *at->second;
      std::vector<int64_t> want = p.shape;
      if (transposed[name] && want.size() == 2)
        std::swap(want[0], want[1]);
      if (t.shape != want)
        return fail(file.string() + ": '" + t.name + "' is " +
                    shapeText(t.shape) + ", but the script's '" + p.name +
                    "' needs " + shapeText(want));
      if (t.dtype != "F32") // bf16 and fp16 were widened above
        return fail(file.string() + ": '" + t.name + "' is " + t.dtype +
                    ", not a float tensor");
      rt::StoredTensor w{p.name, "F32", p.shape, {}};
      if (transposed[name] && want.size() == 2) {
        w.data.resize(t.data.size());
        transposeInto(reinterpret_cast<const float *>(t.data.data()), want[0],
                      want[1], reinterpret_cast<float *>(w.data.data()));
      } else {
        w.data = std::move(t.data);
      }
      placed[p.name] = std::move(w);
    }
  }
  // A tied head (Llama 3.2 1B) is the embedding, which the script's own
  // head takes transposed.
  auto head = wanted.find("lm_head.weight");
  auto embed = wanted.find("model.embed_tokens.weight");
  if (tied && head != wanted.end() && !placed.count(head->second->name) &&
      embed != wanted.end() && placed.count(embed->second->name)) {
    const rt::StoredTensor &e = placed[embed->second->name];
    const Parameter &h = *head->second;
    if (h.shape.size() != 2 || e.shape.size() != 2 ||
        h.shape[0] != e.shape[1] || h.shape[1] != e.shape[0])
      return fail("the script's head '" + h.name + "' is " +
                  shapeText(h.shape) + ", not the tied embedding's " +
                  shapeText(e.shape) + " transposed");
    rt::StoredTensor w{h.name, "F32", h.shape, e.data};
    transposeInto(reinterpret_cast<const float *>(e.data.data()), e.shape[0],
                  e.shape[1], reinterpret_cast<float *>(w.data.data()));
    placed[h.name] = std::move(w);
  }
  for (const Parameter &p : params) {
    auto it = placed.find(p.name);
    if (it == placed.end())
      return fail(options.source + " has no '" + hfOf[p.name] +
                  "' for the script's '" + p.name + "'");
    result.parameters += static_cast<int64_t>(it->second.data.size() / 4);
    out.tensors.push_back(std::move(it->second));
    for (int s = 0; s < states; ++s)
      out.tensors.push_back(
          {p.name + ".optimizer_" + std::to_string(s), "F32", p.shape,
           std::vector<uint8_t>(out.tensors.back().data.size(), 0)});
    ++result.tensors;
  }
  if (!isSingleFilePath(options.output))
    return fail("the imported checkpoint is one file: name it "
                "FILE.safetensors, not '" +
                options.output + "'");
  if (rt::Status st = rt::writeSafetensors(options.output, out); !st)
    return fail(st.message());
  result.ok = true;
  return result;
}

} // namespace whale
