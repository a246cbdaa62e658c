//===- ElementProgramBuilder.h - fused regions as element programs -*- C++
//-*-===//
//
// Writes a `whale.fused` region as the element program a GPU thread runs
// (runtime/ops/ElementProgram.h has the layout and the interpreter): the
// region's merged iteration space, its operands' relation to it, and its ops'
// scalar arithmetic as register instructions, from the same rules
// (FusedScalars.h) the generated CPU kernels follow.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_FUSION_ELEMENTPROGRAMBUILDER_H
#define WHALE_LOWERING_TRANSFORMS_FUSION_ELEMENTPROGRAMBUILDER_H

#include "dialects/Whale/IR/WhaleOps.h"

#include <string>
#include <vector>

namespace whale {

/// The program's words; empty, with `why`, for a region no element
/// program runs (one that ends in an op of each row, sums over different
/// dimensions, or has more operands or live values than a thread holds).
/// `tooLong`, where given, says whether it failed by its length alone:
/// more instructions, or more live values, than a program holds, which a
/// shorter region escapes.
std::vector<int64_t> buildFusedProgram(FusedOp op, std::string &why,
                                       bool *tooLong = nullptr);

} // namespace whale

#endif
