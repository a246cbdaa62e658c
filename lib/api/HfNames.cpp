//===- HfNames.cpp - a script's own table of transformers' names ----------===//

#include "lib/api/HfNames.h"

#include "llvm/Support/JSON.h"

#include <fstream>
#include <sstream>

namespace whale {
namespace {

constexpr const char *kIndex = "{i}";
/// Rules in one file: more is not a model's table but a mistake, and each
/// name is matched against all of them.
constexpr size_t kMostRules = 4096;

/// `s` cut around its one `{i}`; false where it has more than one.
bool cutAtIndex(const std::string &s, std::string &before, std::string &after,
                bool &indexed) {
  const size_t at = s.find(kIndex);
  indexed = at != std::string::npos;
  if (!indexed) {
    before = s;
    after.clear();
    return true;
  }
  before = s.substr(0, at);
  after = s.substr(at + 3);
  return after.find(kIndex) == std::string::npos;
}

/// A layer's number as a name writes it: decimal digits, no leading zero
/// (but "0"), at most 9 of them.
bool isLayerNumber(const std::string &s) {
  return !s.empty() && s.size() <= 9 &&
         s.find_first_not_of("0123456789") == std::string::npos &&
         (s.size() == 1 || s[0] != '0');
}

} // namespace

bool HfNames::parse(const std::string &text, const std::string &file,
                    HfNames &out, std::string &error) {
  out = HfNames();
  out.file = file;
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value) {
    error = file + ": not JSON: " + llvm::toString(value.takeError());
    return false;
  }
  const llvm::json::Object *object = value->getAsObject();
  if (!object) {
    error = file + ": expected an object of the script's parameter names "
                   "and transformers' names";
    return false;
  }
  if (object->size() > kMostRules) {
    error = file + ": " + std::to_string(object->size()) +
            " rules, more than the " + std::to_string(kMostRules) +
            " a names file may hold";
    return false;
  }
  for (const auto &[k, v] : *object) {
    const std::string key = k.str();
    auto bad = [&](const std::string &what) {
      error = file + ": rule '" + key + "': " + what;
      return false;
    };
    Rule r;
    r.key = key;
    std::string hf;
    if (std::optional<llvm::StringRef> s = v.getAsString()) {
      hf = s->str();
    } else if (const llvm::json::Object *o = v.getAsObject()) {
      for (const auto &[field, unused] : *o)
        if (field != "hf" && field != "transposed")
          return bad("unknown field '" + field.str() +
                     "'; a rule's fields are hf and transposed");
      std::optional<llvm::StringRef> name = o->getString("hf");
      if (!name)
        return bad("expected \"hf\": transformers' name of the weight");
      hf = name->str();
      if (const llvm::json::Value *t = o->get("transposed")) {
        std::optional<bool> flag = t->getAsBoolean();
        if (!flag)
          return bad("expected \"transposed\": true or false");
        r.transposed = *flag;
      }
    } else {
      return bad("expected transformers' name, or {\"hf\": NAME, "
                 "\"transposed\": true}");
    }
    if (key.empty() || hf.empty())
      return bad("a rule names a parameter and a weight, neither empty");
    bool hfIndexed = false;
    if (!cutAtIndex(key, r.before, r.after, r.indexed) ||
        !cutAtIndex(hf, r.hfBefore, r.hfAfter, hfIndexed))
      return bad("'{i}' stands for one layer number: at most once in a "
                 "name");
    if (r.indexed != hfIndexed)
      return bad(std::string("'{i}' is in ") +
                 (r.indexed ? "the script's name but not in transformers' "
                            : "transformers' name but not in the script's ") +
                 "'" + hf + "': a layer's number goes from one to the other");
    out.rules.push_back(std::move(r));
  }
  return true;
}

bool HfNames::read(const std::string &path, HfNames &out, std::string &error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = "cannot read the names file '" + path + "'";
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str(), path, out, error);
}

std::optional<HfTensorPlace> HfNames::place(const std::string &model,
                                            const std::string &name,
                                            std::string &error) const {
  if (file.empty())
    return hfLlamaPlace(model, name);
  std::optional<HfTensorPlace> found;
  const Rule *by = nullptr;
  for (const Rule &r : rules) {
    std::string hf;
    if (!r.indexed) {
      if (name != r.before)
        continue;
      hf = r.hfBefore;
    } else {
      if (name.size() < r.before.size() + r.after.size() ||
          name.compare(0, r.before.size(), r.before) != 0 ||
          name.compare(name.size() - r.after.size(), r.after.size(), r.after) !=
              0)
        continue;
      const std::string layer = name.substr(
          r.before.size(), name.size() - r.before.size() - r.after.size());
      if (!isLayerNumber(layer))
        continue;
      hf = r.hfBefore + layer + r.hfAfter;
    }
    if (by) {
      error = file + ": both rule '" + by->key + "' and rule '" + r.key +
              "' name the script's '" + name + "'";
      return std::nullopt;
    }
    by = &r;
    found = HfTensorPlace{hf, r.transposed};
  }
  return found;
}

std::string HfNames::unknown(const std::string &name) const {
  if (file.empty())
    return "parameter '" + name +
           "' is not one of the stdlib's Llama parts (nn.embed, "
           "nn.llama_block, nn.rmsnorm, nn.proj as examples/llama.whl builds "
           "them; a model of other parts names its weights in a names file, "
           "--hf-names)";
  return "parameter '" + name + "' matches no rule of the names file '" + file +
         "'";
}

} // namespace whale
