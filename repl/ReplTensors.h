//===- ReplTensors.h - the REPL session's tensors ----------------*- C++
//-*-===//
//
// The values `x = <tensor expression>` keeps, the `randn([2, 3])` samples
// an expression may ask for, and the file `:save` keeps them in.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_REPL_REPLTENSORS_H
#define WHALE_REPL_REPLTENSORS_H

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace whale {

struct TensorValue {
  std::vector<int64_t> shape;
  bool isFloat = true;
  std::vector<float> f;
  std::vector<int32_t> i;
};

/// Named tensors, in the order they were made.
using NamedTensors = std::vector<std::pair<std::string, TensorValue>>;

/// Adds `value` as `name`, or replaces the tensor of that name in place.
void keepTensor(NamedTensors &tensors, const std::string &name,
                TensorValue value);

/// The most values one `randn` makes: the REPL computes small examples.
inline constexpr int64_t kMaxReplRandomValues = int64_t(1) << 24;

/// Replaces each `randn([d0, d1, ...])` in `expr` by the name of a new
/// tensor of standard normal samples from `rng`, added to `made` (the
/// language has no random values of its own: a model's randomness is its
/// parameters' initializers). "" or what is wrong with a call.
std::string expandRandn(std::string &expr, std::mt19937_64 &rng,
                        NamedTensors &made);

/// Writes `tensors` to a safetensors file at `path` (with checksums, as
/// checkpoints are), or reads the file's tensors into `tensors` (replacing
/// those of the same names); "" or what went wrong. The file records the
/// checksum of `script`, the session's script saved beside it, and is
/// loaded only beside that script: a save that failed between the two
/// files, or a file copied over, never mixes two sessions.
std::string saveTensors(const std::string &path, const NamedTensors &tensors,
                        const std::string &script);
std::string loadTensors(const std::string &path, NamedTensors &tensors,
                        const std::string &script);

} // namespace whale

#endif
