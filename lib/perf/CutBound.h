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

#ifndef WHALE_LIB_PERF_CUTBOUND_H
#define WHALE_LIB_PERF_CUTBOUND_H

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
/// With f_p and b_p the forward and backward share of these for one
/// micro-batch at each position p of the pipeline (a stage's chunk: chunk 0
/// of every stage, then chunk 1, ...), each stage running the steps of its
/// schedule one after another on its compute stream:
///   - stage j cannot start its first step (a forward on chunk 0) before
///     each position i on another stage that it reads from has run one
///     forward, after its own stage began: S_j >= S_stage(i) + f_i;
///   - it then runs every step of its schedule: L_j >= S_j + sum of them;
///   - its last step, a backward on chunk 0 of some micro-batch, waits for
///     the gradients its readers send at the end of theirs; where that is
///     a reader k's last step too (the same micro-batch), L_j >= L_k + b_i.
/// The iteration is at least the largest L: with one chunk a stage, the
/// fill and drain of the slowest path through the pipeline; with several
/// (interleaved), a chunk's share of it. Returns 0 where it proves
/// nothing: uneven shares or shards (ranks of one stage run programs of
/// different sizes), or a schedule the planner would refuse.
double cutBound(mlir::func::FuncOp model, const sim::Topology &topology);

} // namespace whale

#endif // WHALE_LIB_CUTBOUND_H
