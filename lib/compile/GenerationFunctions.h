//===- GenerationFunctions.h - a model's logits, whole or a step -*- C++
//-*-===//
//
// Generation reads a model's logits one position at a time. Run whole, the
// model recomputes every earlier position's keys and values at each step;
// its decoding step computes only the new position's and keeps the others
// in caches, one pair per attention. The step is derived from the model's
// logits function: every op that works on each position alone runs on the
// one new row; rope turns it by its position; a learned position table
// [T, D] gives its row at the position (an embedding lookup); and each
// causal attention (fused: whale.attention, head- or sequence-major)
// becomes a whale.kv_attention that writes its key and value rows into the
// caches and attends over them. A model with an op that mixes positions in
// another way (a sum over time, attention that is not causal, attention
// left as a matmul and softmax chain) has no such step, and says which op.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_COMPILE_GENERATIONFUNCTIONS_H
#define WHALE_LIB_COMPILE_GENERATIONFUNCTIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace whale {

/// Adds `@<model>_logits` beside `model`: the model up to the logits its
/// cross entropy reads (the loss and what feeds only it dropped); null
/// with `error` set for a model whose loss is no cross entropy of its
/// second input (the targets).
mlir::func::FuncOp addLogitsFunction(mlir::func::FuncOp model,
                                     std::string &error);

/// `<logits>_decode (token [1, 1] i32, position tensor<i32>, caches...)
/// -> (logits [1, 1, V], new caches...)`: the logits at position
/// `position` of one text, given caches that hold the keys and values of
/// its positions before it. The caches come in pairs (key, value) in the
/// order of the attentions, each [1, Hk, W, E] with W the model's window.
/// (The model's batch of B texts is one: each op treats each text alone.)
struct DecodeFunction {
  mlir::func::FuncOp fn;
  std::vector<std::vector<int64_t>> caches; ///< their shapes, in order
  int64_t window = 0;                       ///< W: positions a cache holds
};

/// Adds the decoding step of `logits` (a model's function from tokens
/// [B, T] to logits [B, T, V]) to its module beside it; "" or why the model
/// has none (the op that mixes positions, with its location), the module
/// then unchanged.
std::string addDecodeFunction(mlir::func::FuncOp logits, DecodeFunction &out);

} // namespace whale

#endif
