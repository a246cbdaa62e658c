//===- CutBound.h - the least time a planned cut allows -----------*- C++
//-*-===//
//
// `whale search` sets a candidate aside once its least possible time is past
// the K-th best plan found. Before the cut is known that bound is the model's
// FLOPs at peak, stretched by the least fill and drain any cut allows. Once
// the planning passes have cut the model (and before the rank programs are
// built, which unroll every micro-batch and are most of planning a large
// pipeline), each stage's matrix products and tensor-parallel collectives are
// known, and the device and link models price them exactly as the replay
// will. This file turns them into a bound on the iteration: their time
// alone, through the pipeline's fill and drain as the stages' dependences
// force it.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_CUTBOUND_H
#define WHALE_LIB_CUTBOUND_H

namespace mlir::func {
class FuncOp;
}

namespace whale {
namespace sim {
struct Topology;
}

/// The least time an iteration of the planned model `model` (cut into
/// TaskGraphs, elaborated at its micro-batch) can take on `topology`,
/// whose devices are alike, priced by the device model with no profile.
///
/// What counts is what the planner's later passes never fuse, move or
/// change, and what the rank waits in:
///   - matrix products and attention: each stage's forward ones, and the
///     backward products its rank program keeps (an operand's gradient
///     where the operand depends on a trained parameter or on a value
///     another stage sent, through ops whose gradients reach every float
///     operand), priced as the replay prices those ops;
///   - the shard group's collectives, forward and backward, at the least
///     the group's links and algorithms allow.
/// With f_s and b_s a stage's forward and backward share of these for one
/// micro-batch, and m micro-batches run one after another on a stage's
/// compute stream:
///   - stage j cannot start its first forward before each stage i it reads
///     from has run one forward: S_j >= S_i + f_i;
///   - it then runs all of its own: L_j >= S_j + m (f_j + b_j);
///   - every stage ends on the backward of the same micro-batch, which on
///     stage i waits for the gradients its readers j send at the end of
///     theirs: L_i >= L_j + b_i.
///
/// The iteration is at least the largest L. Returns 0 where that does not
/// hold or is not known: interleaved stages, uneven shares or shards,
/// schedules whose stages do not end on the same micro-batch.
double cutBound(mlir::func::FuncOp model, const sim::Topology &topology);

} // namespace whale

#endif // WHALE_LIB_CUTBOUND_H
