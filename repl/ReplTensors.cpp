//===- ReplTensors.cpp - the REPL session's tensors
//------------------------===//

#include "repl/ReplTensors.h"

#include "lang/Lexer.h"

#include "runtime/store/Crc32.h"
#include "runtime/store/Safetensors.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

namespace whale {
namespace {

bool identifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

void skipSpaces(const std::string &s, size_t &at) {
  while (at < s.size() && std::isspace(static_cast<unsigned char>(s[at])))
    ++at;
}

/// Parses `[d0, d1, ...])` at `at` (past `randn(`); false when it is not.
bool parseExtents(const std::string &s, size_t &at,
                  std::vector<int64_t> &shape) {
  skipSpaces(s, at);
  if (at >= s.size() || s[at++] != '[')
    return false;
  skipSpaces(s, at);
  if (at < s.size() && s[at] == ']') {
    ++at; // randn([]): a scalar
  } else {
    for (;;) {
      skipSpaces(s, at);
      size_t start = at;
      while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at])))
        ++at;
      if (at == start || at - start > 12)
        return false;
      shape.push_back(std::stoll(s.substr(start, at - start)));
      skipSpaces(s, at);
      if (at < s.size() && s[at] == ',') {
        ++at;
        continue;
      }
      if (at >= s.size() || s[at++] != ']')
        return false;
      break;
    }
  }
  skipSpaces(s, at);
  return at < s.size() && s[at++] == ')';
}

/// A standard normal sample (Box-Muller over 53-bit uniforms), the same
/// on every platform for the same generator state.
float normalSample(std::mt19937_64 &rng) {
  auto uniform = [&] { return double((rng() >> 11) + 1) * 0x1.0p-53; };
  double u = uniform(), v = uniform();
  return static_cast<float>(std::sqrt(-2.0 * std::log(u)) *
                            std::cos(2.0 * M_PI * v));
}

} // namespace

std::string expandRandn(std::string &expr, std::mt19937_64 &rng,
                        NamedTensors &made) {
  static const std::string kCall = "randn";
  for (size_t at = expr.find(kCall); at != std::string::npos;
       at = expr.find(kCall, at + 1)) {
    size_t open = at + kCall.size();
    skipSpaces(expr, open);
    if ((at > 0 && identifierChar(expr[at - 1])) || open >= expr.size() ||
        expr[open] != '(' ||
        (at + kCall.size() < expr.size() &&
         identifierChar(expr[at + kCall.size()])))
      continue;
    size_t end = open + 1;
    std::vector<int64_t> shape;
    if (!parseExtents(expr, end, shape))
      return "randn takes a list of integer extents, as in randn([2, 3])";
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d < 1 || n > kMaxReplRandomValues / d)
        return "randn makes from 1 to " + std::to_string(kMaxReplRandomValues) +
               " values in the REPL, with every extent at least 1";
      n *= d;
    }
    TensorValue value;
    value.shape = shape;
    value.f.resize(static_cast<size_t>(n));
    for (float &x : value.f)
      x = normalSample(rng);
    std::string name = "__randn" + std::to_string(made.size());
    made.push_back({name, std::move(value)});
    expr.replace(at, end - at, name);
    at += name.size() - 1;
  }
  return "";
}

std::string scriptTag(const std::string &script) {
  return std::to_string(rt::crc32(
      reinterpret_cast<const uint8_t *>(script.data()), script.size()));
}

std::string saveTensors(const std::string &path, const NamedTensors &tensors,
                        const std::string &script) {
  rt::Checkpoint file;
  file.metadata["whale.kind"] = "repl tensors";
  file.metadata["whale.script_crc32"] = scriptTag(script);
  for (const auto &[name, t] : tensors) {
    const void *data = t.isFloat ? static_cast<const void *>(t.f.data())
                                 : static_cast<const void *>(t.i.data());
    size_t bytes = 4 * (t.isFloat ? t.f.size() : t.i.size());
    std::vector<uint8_t> raw(bytes);
    if (bytes)
      std::memcpy(raw.data(), data, bytes);
    file.tensors.push_back(
        {name, t.isFloat ? "F32" : "I32", t.shape, std::move(raw)});
  }
  rt::Status st = rt::writeSafetensors(path, file);
  return st.isOk() ? "" : st.message();
}

std::string loadTensors(const std::string &path, NamedTensors &tensors,
                        const std::string &script) {
  rt::Checkpoint file;
  if (rt::Status st = rt::readSafetensors(path, file); !st.isOk())
    return st.message();
  // Saved with another script than the one beside it (a save that failed
  // halfway, a file copied over): its tensors would not be the session's.
  if (auto tag = file.metadata.find("whale.script_crc32");
      tag != file.metadata.end() && tag->second != scriptTag(script))
    return path + " was saved with another version of its script, so its "
                  "tensors are not loaded (the script's definitions are)";
  NamedTensors read;
  for (const rt::StoredTensor &s : file.tensors) {
    // Each becomes a name later expressions read: one that is no name
    // ('a b', a keyword) would break every one of them.
    if (!lang::isPlainIdentifier(s.name))
      return path + ": tensor '" + s.name +
             "' is not a name the session can use (letters, digits and _, "
             "not a keyword, not starting with a digit); no tensor was "
             "loaded";
    if (s.dtype != "F32" && s.dtype != "I32")
      return path + ": tensor '" + s.name + "' is " + s.dtype +
             "; the REPL keeps F32 and I32 tensors";
    TensorValue t;
    t.shape = s.shape;
    t.isFloat = s.dtype == "F32";
    size_t n = s.data.size() / 4;
    if (t.isFloat) {
      t.f.resize(n);
      std::memcpy(t.f.data(), s.data.data(), n * 4);
    } else {
      t.i.resize(n);
      std::memcpy(t.i.data(), s.data.data(), n * 4);
    }
    read.push_back({s.name, std::move(t)});
  }
  for (auto &[name, t] : read)
    keepTensor(tensors, name, std::move(t));
  return "";
}

void keepTensor(NamedTensors &tensors, const std::string &name,
                TensorValue value) {
  auto it = std::find_if(tensors.begin(), tensors.end(),
                         [&](const auto &t) { return t.first == name; });
  if (it != tensors.end())
    it->second = std::move(value);
  else
    tensors.push_back({name, std::move(value)});
}

} // namespace whale
