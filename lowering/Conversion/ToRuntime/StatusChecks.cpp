//===- StatusChecks.cpp - Branches on the runtime's statuses --------------===//
//
// The patterns emit each op's calls straight-line. Here, once, every
// marked call gets its check (a failed status leaves the function with
// it) and every owner's scf.if its blocks. The block is split from its end
// backwards, so each op moves once: splitting from the front would move
// every later op at each call, quadratic in the function's length.
//
//===----------------------------------------------------------------------===//

#include "lowering/Conversion/ToRuntime/RuntimePatterns.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace whale;

static void checkBlock(Block *block, Block *exit) {
  SmallVector<Operation *> points;
  for (Operation &op : *block)
    if (op.hasAttr(kStatusCallAttr) || isa<scf::IfOp>(op))
      points.push_back(&op);
  for (Operation *op : llvm::reverse(points)) {
    Block *rest = block->splitBlock(std::next(op->getIterator()));
    auto b = OpBuilder::atBlockEnd(block);
    Location loc = op->getLoc();
    if (auto call = dyn_cast<LLVM::CallOp>(op)) {
      call->removeAttr(kStatusCallAttr);
      Value status = call.getResult();
      Value ok = LLVM::ConstantOp::create(b, loc, status.getType(),
                                          b.getI32IntegerAttr(WHALE_RT_OK));
      Value failed =
          LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, status, ok);
      LLVM::CondBrOp::create(b, loc, failed, exit, ValueRange{status}, rest,
                             ValueRange{});
      continue;
    }
    // An owner's branch, and the others' where there is one (a parameter
    // made on its owner, a handle elsewhere).
    auto ifOp = cast<scf::IfOp>(op);
    auto branch = [&](Block *body) -> Block * {
      if (!body)
        return rest;
      auto *block = new Block();
      block->insertBefore(rest);
      block->getOperations().splice(block->end(), body->getOperations(),
                                    body->begin(),
                                    body->getTerminator()->getIterator());
      auto atEnd = OpBuilder::atBlockEnd(block);
      LLVM::BrOp::create(atEnd, loc, ValueRange{}, rest);
      return block;
    };
    Block *then = branch(ifOp.thenBlock());
    Block *otherwise = branch(ifOp.elseBlock());
    LLVM::CondBrOp::create(b, loc, ifOp.getCondition(), then, ValueRange{},
                           otherwise, ValueRange{});
    ifOp.erase();
    checkBlock(then, exit);
    if (otherwise != rest)
      checkBlock(otherwise, exit);
  }
}

void whale::materializeStatusChecks(LLVM::LLVMFuncOp fn, Block *exit) {
  checkBlock(&fn.getBody().front(), exit);
}
