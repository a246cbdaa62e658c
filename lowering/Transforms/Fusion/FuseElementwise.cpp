//===- FuseElementwise.cpp - -whale-fuse-elementwise ----------------------===//
//
// Groups chains of elementwise ops of one iteration shape, and the sums
// that end them (a bias's gradient, reduce_sum, reduce_mean) or the op of
// each row that ends them (layernorm, RMSNorm, softmax over the last dimension,
// where every input is whole, a row or an element), into
// `whale.fused` regions, in each block of each function, in one pass over
// the block in program order. An op joins the group of an operand's
// producer when it iterates over the same shape, that operand does not
// end a chain (nothing in a region reads a sum or a row op's result), no
// op outside the group, placed before it, reads a value of the group, and
// no op that makes a value stands between the group and it (a parameter
// may: it allocates nothing). The one op that may read a row op's result
// is its rounding to bf16 (amp's storage), where nothing else reads it:
// the region stores the rows rounded. The region then stands where its
// last op stood, after everything it reads and before everything that
// reads it, so the program keeps its order and meaning, and no value
// lives longer than it did.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/CloneBody.h"
#include "lowering/ElementTypes.h"
#include "lowering/Passes.h"
#include "lowering/Transforms/Fusion/ElementProgramBuilder.h"
#include "lowering/Transforms/Fusion/IdentityGradients.h"
#include "lowering/Transforms/Fusion/NormResiduals.h"

#include "runtime/ops/ElementProgram.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Threading.h"

#include <limits>

namespace whale {
#define GEN_PASS_DEF_WHALEFUSEELEMENTWISE
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// The shape `op` iterates over: its result's, or for a sum the shape of
/// the value it sums, with f32 elements (a cast to bf16 iterates as the
/// f32 ops around it do).
Type iterationType(Operation *op) {
  Value v = FusedOp::isFusibleReduction(op) ? FusedOp::reducedValue(op)
                                            : op->getResult(0);
  return withElement(v.getType(), Float32Type::get(op->getContext()));
}

struct Group {
  SmallVector<Operation *> ops; ///< in program order
  llvm::SmallPtrSet<Operation *, 8> members;
  bool sums = false;                ///< some op sums over dimensions
  Operation *rowOp = nullptr;       ///< the op of each row it ends in
  Operation *rowRounding = nullptr; ///< the rounding of rowOp's result
  SmallVector<bool> kept;           ///< the dimensions its first sum keeps
};

/// The operands a region of `g` and `op` would have: the values they read
/// from outside them, and those of their values read outside them. (A
/// later op that joins reads some of these, so the region only shrinks.)
size_t operandsWith(const Group &g, Operation *op, Block &block) {
  llvm::SmallPtrSet<Value, 16> inputs;
  size_t results = 0;
  auto inside = [&](Operation *o) { return o == op || g.members.count(o); };
  auto count = [&](Operation *member) {
    for (Value v : member->getOperands())
      if (!inside(v.getDefiningOp()))
        inputs.insert(v);
    if (llvm::any_of(member->getResult(0).getUsers(), [&](Operation *u) {
          return !inside(block.findAncestorOpInBlock(*u));
        }))
      ++results;
  };
  for (Operation *member : g.ops)
    count(member);
  count(op);
  return inputs.size() + results;
}

/// Whether `op` widens a bf16 value to fp32 (amp's storage).
bool isWidening(Operation *op) {
  auto c = dyn_cast<CastOp>(op);
  return c && isBf16Tensor(c.getInput().getType()) &&
         elementOf(c.getType()).isF32();
}

/// Moves the widenings of a region's inputs into it: the region reads the
/// bf16 value and widens it in registers as it loads it, and a cast no
/// one else reads goes. (A broadcast input's widening too: a conversion
/// is one element's, whatever shape it is read at.)
void absorbInputWidenings(FusedOp region) {
  Block &body = region.getBody().front();
  OpBuilder b(region.getContext());
  b.setInsertionPointToStart(&body);
  for (OpOperand &input : region->getOpOperands()) {
    auto c = input.get().getDefiningOp<CastOp>();
    if (!c || !isWidening(c))
      continue;
    BlockArgument arg = body.getArgument(input.getOperandNumber());
    // A norm takes its scale and shift (or weight) from the region's
    // inputs themselves (the row kernels read them apart from the chain).
    if (llvm::any_of(arg.getUses(), [](OpOperand &use) {
          return isa<LayerNormOp, RmsNormOp>(use.getOwner()) &&
                 use.getOperandNumber() > 0;
        }))
      continue;
    input.set(c.getInput());
    arg.setType(c.getInput().getType());
    auto widened = CastOp::create(b, c.getLoc(), c.getType(), arg);
    arg.replaceAllUsesExcept(widened, widened);
    if (c->use_empty())
      c->erase();
  }
}

bool hasBf16Operand(FusedOp region) {
  return llvm::any_of(region->getOperandTypes(), isBf16Tensor) ||
         llvm::any_of(region->getResultTypes(), isBf16Tensor);
}

/// Puts a region's ops back where it stands.
void unfuse(FusedOp fused) {
  OpBuilder b(fused);
  fused->replaceAllUsesWith(
      cloneBody(b, fused.getBody().front(), fused.getInputs()));
  fused.erase();
}

class BlockFuser {
public:
  /// `maxOps`: the most ops a region takes (regions too long for an
  /// element program are made again shorter).
  BlockFuser(Block &block, bool elementPrograms,
             size_t maxOps = std::numeric_limits<size_t>::max())
      : block(block), elementPrograms(elementPrograms), maxOps(maxOps) {}

  void run() {
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      if (FusedOp::isFusible(&op) || FusedOp::endsChain(&op))
        ops.push_back(&op);
    for (Operation *op : ops)
      place(op);
    for (Group &g : groups)
      fuse(g);
  }

  /// The regions made, for a check of their element programs.
  SmallVector<FusedOp> regions;

private:
  /// `user`'s ancestor in this block (a TaskGraph holding it, say).
  Operation *inBlock(Operation *user) {
    return block.findAncestorOpInBlock(*user);
  }

  /// Whether `op` rounds the result of `g`'s row op to bf16, as the only
  /// reader of it, in rows no wider than a region's kernels keep apart.
  static bool roundsRows(const Group &g, Operation *op) {
    return g.rowOp && FusedOp::getRowRounding(g.rowOp) == op &&
           cast<RankedTensorType>(iterationType(op)).getShape().back() <=
               FusedOp::kMaxRoundedRowWidth;
  }

  /// Whether `op` may join group `g`: every reader of the group's values
  /// outside it comes after `op`.
  bool mayJoin(const Group &g, Operation *op) {
    if (iterationType(g.ops.front()) != iterationType(op))
      return false;
    if (g.ops.size() >= maxOps ||
        (elementPrograms && !fitsElementProgram(g, op)))
      return false;
    // A sum ends its chain: what reads it (x - mean(x)) is after the loop
    // that makes it, not in it; so does an op of each row, but for its
    // rounding, and so does that rounding.
    const bool rounds = roundsRows(g, op);
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && g.members.count(def) &&
          ((FusedOp::endsChain(def) && !rounds) || def == g.rowRounding))
        return false;
    }
    // A region of rows has no sums over other dimensions, and reads only
    // whole values, rows and elements.
    bool rowOp = FusedOp::isFusibleRowOp(op);
    if (rowOp && llvm::any_of(op->getOperands().drop_front(), [&](Value v) {
          return g.members.count(v.getDefiningOp());
        }))
      return false; // a norm's scale and shift are the region's inputs
    if ((rowOp && (g.sums || g.rowOp)) ||
        (g.rowOp && FusedOp::isFusibleReduction(op)))
      return false;
    if (rowOp || g.rowOp) {
      ArrayRef<int64_t> shape =
          cast<RankedTensorType>(iterationType(op)).getShape();
      auto fits = [&](Operation *member) {
        return llvm::all_of(member->getOperands(), [&](Value v) {
          return g.members.count(v.getDefiningOp()) ||
                 FusedOp::isRowCompatible(v.getType(), shape);
        });
      };
      if (!fits(op) || (rowOp && !llvm::all_of(g.ops, fits)))
        return false;
    }
    // Nothing that makes a value stands between the group and `op`: the
    // region runs where its last op stood, so its inputs live until then,
    // and over an op that allocates they would raise the program's peak
    // memory above what the planner, which plans the unfused program,
    // counted on.
    // (A parameter allocates nothing: it names memory the context holds.
    // Nor does the widening of an input that only `op` and the group read:
    // the region takes it in, absorbInputWidenings.)
    auto takenIn = [&](Operation *at) {
      return isWidening(at) && llvm::all_of(at->getUsers(), [&](Operation *u) {
               return u == op || g.members.count(inBlock(u));
             });
    };
    for (Operation *at = g.ops.back()->getNextNode(); at && at != op;
         at = at->getNextNode())
      if (at->getNumResults() > 0 && !isa<ParamOp>(at) && !takenIn(at))
        return false;
    for (Operation *member : g.ops)
      for (Operation *user : member->getResult(0).getUsers()) {
        Operation *at = inBlock(user);
        if (at && at != op && !g.members.count(at) && at->isBeforeInBlock(op))
          return false;
      }
    return true;
  }

  /// What an element program runs: one set of summed dimensions, and the
  /// operands a thread holds.
  bool fitsElementProgram(const Group &g, Operation *op) {
    if (FusedOp::isFusibleReduction(op) && g.sums &&
        FusedOp::keptDimensions(
            op, cast<RankedTensorType>(iterationType(op)).getShape()) != g.kept)
      return false;
    return operandsWith(g, op, block) <= size_t(rt::fused::kMaxOperands);
  }

  void place(Operation *op) {
    // The widening of a value no region makes is no op of a chain: each
    // region that reads it takes it in as it loads it.
    if (isWidening(op) && !groupOf.count(op->getOperand(0).getDefiningOp()))
      return;
    // A sum joins the chain that makes what it sums, or stays the
    // runtime's: alone it would be the runtime's reduction over again.
    // So does an op of each row, with the chain that makes its input.
    bool sum = FusedOp::isFusibleReduction(op);
    bool rowOp = FusedOp::isFusibleRowOp(op);
    SmallVector<Value> joinable;
    if (sum)
      joinable.push_back(FusedOp::reducedValue(op));
    else if (rowOp)
      joinable.push_back(op->getOperand(0));
    else
      joinable.append(op->operand_begin(), op->operand_end());
    for (Value v : joinable) {
      auto it = groupOf.find(v.getDefiningOp());
      if (it == groupOf.end() || !mayJoin(groups[it->second], op))
        continue;
      Group &g = groups[it->second];
      g.ops.push_back(op);
      g.members.insert(op);
      if (sum && !g.sums)
        g.kept = FusedOp::keptDimensions(
            op, cast<RankedTensorType>(iterationType(op)).getShape());
      g.sums |= sum;
      if (rowOp)
        g.rowOp = op;
      if (roundsRows(g, op))
        g.rowRounding = op;
      groupOf[op] = it->second;
      return;
    }
    if (sum || rowOp)
      return;
    groupOf[op] = groups.size();
    groups.emplace_back();
    groups.back().ops.push_back(op);
    groups.back().members.insert(op);
  }

  /// Replaces the group's ops by one region where its last op stood.
  void fuse(Group &g) {
    SmallVector<Value> inputs, results;
    llvm::SmallPtrSet<Value, 8> seen;
    for (Operation *op : g.ops)
      for (Value v : op->getOperands())
        if (!g.members.count(v.getDefiningOp()) && seen.insert(v).second)
          inputs.push_back(v);
    for (Operation *op : g.ops)
      if (llvm::any_of(op->getResult(0).getUsers(), [&](Operation *u) {
            return !g.members.count(inBlock(u));
          }))
        results.push_back(op->getResult(0));
    if (results.empty())
      return; // nothing reads it: left for the lowering to drop as it is
    // A conversion alone is the runtime's cast already.
    if (llvm::all_of(g.ops, [](Operation *op) { return isa<CastOp>(op); }))
      return;

    OpBuilder b(g.ops.back()->getContext());
    b.setInsertionPointAfter(g.ops.back());
    auto fused = FusedOp::createAround(b, g.ops.back()->getLoc(), g.ops, inputs,
                                       results);
    regions.push_back(fused);

    for (auto [r, f] : llvm::zip(results, fused.getResults()))
      r.replaceUsesWithIf(f, [&](OpOperand &use) {
        return !g.members.count(inBlock(use.getOwner()));
      });
    for (Operation *op : llvm::reverse(g.ops))
      op->erase();
  }

  Block &block;
  const bool elementPrograms;
  const size_t maxOps;
  std::vector<Group> groups;
  llvm::DenseMap<Operation *, size_t> groupOf;
};

struct FuseElementwisePass
    : public whale::impl::WhaleFuseElementwiseBase<FuseElementwisePass> {
  using WhaleFuseElementwiseBase::WhaleFuseElementwiseBase;

  void runOnOperation() override {
    // Functions are isolated from each other, so their bodies fuse side by
    // side on the context's threads (a pipeline's stages are functions of
    // up to millions of ops each); the blocks outside them fuse after.
    SmallVector<Operation *> isolated;
    SmallVector<Block *> outside;
    getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op != getOperation() &&
          op->hasTrait<OpTrait::IsIsolatedFromAbove>()) {
        isolated.push_back(op);
        return WalkResult::skip();
      }
      if (!isa<FusedOp>(op))
        for (Region &region : op->getRegions())
          for (Block &block : region)
            outside.push_back(&block);
      return WalkResult::advance();
    });
    parallelForEach(&getContext(), isolated, [&](Operation *fn) {
      // A norm's input gradient takes its residual's first: that sum is
      // then no element op to fuse.
      fuseNormResiduals(fn);
      SmallVector<Block *> blocks;
      fn->walk([&](Block *block) {
        if (!isa<FusedOp>(block->getParentOp()))
          blocks.push_back(block);
      });
      for (Block *block : blocks)
        fuseBlock(*block);
    });
    for (Block *block : outside)
      fuseBlock(*block);
  }

  void fuseBlock(Block &block) {
    forwardIdentityGradients(block);
    // The rules above keep regions within what an element program holds;
    // one they missed runs as its ops rather than not at all. So does a
    // region with bf16 operands anywhere: the runtime checks each
    // operand's type against its program's. Where programs run (GPU
    // plans), a region too long for one (a chain of a thousand ops) is put
    // back and its ops fused again into regions of at most half its ops,
    // until each fits (issue 92 item 12).
    size_t maxOps = std::numeric_limits<size_t>::max();
    for (;;) {
      BlockFuser fuser(block, elementPrograms, maxOps);
      fuser.run();
      size_t longest = 0;
      for (FusedOp region : fuser.regions) {
        absorbInputWidenings(region);
        std::string why;
        bool tooLong = false;
        if ((elementPrograms || hasBf16Operand(region)) &&
            buildFusedProgram(region, why, &tooLong).empty()) {
          if (elementPrograms && tooLong)
            longest = std::max(longest, opsIn(region));
          unfuse(region);
        }
      }
      if (longest < 2)
        return;
      maxOps = longest / 2;
    }
  }

  /// The ops a region holds, but for its yield.
  static size_t opsIn(FusedOp region) {
    return region.getBody().front().getOperations().size() - 1;
  }
};

} // namespace
