//===- HfLlamaFacts.h - what a script's Llama says beyond its weights -*-
// C++ -*-===//
//
// A Hugging Face config.json holds what the weights' shapes cannot say:
// heads, key and value heads, the rotary theta and scaling, the norms'
// eps. A script says them in its ops; these are they, read once for the
// import (compared with config.json) and the export (written into it).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_API_HFLLAMAFACTS_H
#define WHALE_LIB_API_HFLLAMAFACTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace whale {

struct LlamaOpFacts {
  /// (query heads, key and value heads) of each attention.
  std::set<std::pair<int64_t, int64_t>> heads;
  std::set<double> thetas, eps;
  /// Each rope's scaling: [factor, low_freq_factor, high_freq_factor,
  /// original positions], or empty when it has none.
  std::set<std::vector<double>> scalings;
};

LlamaOpFacts llamaOpFacts(mlir::func::FuncOp fn);

/// `in`, `rows` x `cols` in row-major order, transposed into `out`
/// (`cols` x `rows`): nn.Linear's [out, in] and nn.proj's [in, out].
void transposeInto(const float *in, int64_t rows, int64_t cols, float *out);

} // namespace whale

#endif
