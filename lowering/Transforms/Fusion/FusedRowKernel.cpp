//===- FusedRowKernel.cpp - fused regions that end in an op of each row ---===//
//
// A region that ends in layernorm, RMSNorm or softmax over the last dimension
// runs row by row: for each row, one loop computes the region's elementwise
// values (writing its results, and the row op's input where no result
// holds it, into the row op's own output as scratch), then the row op
// reads that row back while it is in the cache. The statistics are the
// runtime's, in its order (runtime/cpu/Normalization.cpp): the mean, then
// the variance about it, then the normalized row; the maximum, then the
// exponentials and their sum, then the scaled row; the squares in 16 lanes,
// then the scaled row. Where the region rounds
// the row op's result to bf16 (amp's storage), the row op works in an f32
// row on the stack instead, and one more loop rounds it into the result.
//
//===----------------------------------------------------------------------===//

#include "lowering/Transforms/Fusion/FusedKernel.h"
#include "lowering/Transforms/Fusion/FusedScalars.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <limits>

using namespace mlir;

namespace whale {
namespace {

using kernel::Scalars;

/// The partial sums of an RMSNorm row's squares (runtime/cpu/RmsNorm.cpp's
/// kLanes).
constexpr int64_t kRmsLanes = 16;

/// How a kernel of rows reads an input: a row of it per row (of its rows
/// that repeat along the iteration: FusedOp::getRowPeriod), the same row
/// for every row, or one element.
enum class RowRead { Rows, Row, Element };

RowRead readOf(int64_t period) {
  return period == 0   ? RowRead::Element
         : period == 1 ? RowRead::Row
                       : RowRead::Rows;
}

/// The kernel's body for one row: [1, D] views of every operand.
class RowBody {
public:
  RowBody(OpBuilder &b, Location loc, FusedOp op, ArrayRef<RowRead> reads,
          int64_t width)
      : b(b), loc(loc), op(op), reads(reads), width(width) {}

  /// The map of an input read as `read` over (row, column).
  AffineMap map(RowRead read) {
    MLIRContext *ctx = b.getContext();
    AffineExpr zero = b.getAffineConstantExpr(0);
    switch (read) {
    case RowRead::Rows:
      return b.getMultiDimIdentityMap(2);
    case RowRead::Row:
      return AffineMap::get(2, 0, {zero, b.getAffineDimExpr(1)}, ctx);
    case RowRead::Element:
      return AffineMap::get(2, 0, {zero, zero}, ctx);
    }
    return {};
  }
  AffineMap identity() { return b.getMultiDimIdentityMap(2); }
  AffineMap scalar() { return AffineMap::get(2, 0, {}, b.getContext()); }
  /// Both dimensions (row, column) iterated as `t`.
  SmallVector<utils::IteratorType> both(utils::IteratorType t) {
    return {t, t};
  }

  /// The region's elementwise ops over one row: reads `inputs`, writes
  /// the values `written` into `outs` (f32, or bf16 as the region's
  /// operands are stored: `outTypes`). The ops of each row and their
  /// rounding (`rounding`) run after.
  void elementwise(ArrayRef<Value> inputs, ArrayRef<Value> written,
                   ArrayRef<Value> outs, ArrayRef<Type> outTypes,
                   Operation *rounding) {
    Block &region = op.getBody().front();
    SmallVector<AffineMap> maps;
    for (RowRead r : reads)
      maps.push_back(map(r));
    maps.append(outs.size(), identity());
    linalg::GenericOp::create(
        b, loc, inputs, outs, maps, both(utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nloc, ValueRange elements) {
          Scalars s(nb, nloc);
          SmallVector<Value> loaded;
          for (auto [e, t] : llvm::zip(elements, op.getInputs().getTypes()))
            loaded.push_back(s.loaded(e, t));
          llvm::DenseMap<Value, Value> element =
              s.elements(region, mlir::ValueRange(loaded), [&](Operation *o) {
                return FusedOp::endsChain(o) || o == rounding;
              });
          SmallVector<Value> out;
          for (auto [v, t] : llvm::zip(written, outTypes))
            out.push_back(s.toStore(element.lookup(v), t));
          linalg::YieldOp::create(nb, nloc, out);
        });
  }

  /// Folds f(x, acc) over the row `src` into the scalar `acc`, from
  /// `init`, in the row's order (a sum, a maximum); returns the result.
  Value fold(Value src, Value acc, Value init,
             llvm::function_ref<Value(Scalars &, Value x, Value acc)> f) {
    memref::StoreOp::create(b, loc, init, acc, ValueRange{});
    linalg::GenericOp::create(
        b, loc, ValueRange{src}, ValueRange{acc}, {identity(), scalar()},
        both(utils::IteratorType::reduction),
        [&](OpBuilder &nb, Location nloc, ValueRange e) {
          Scalars s(nb, nloc);
          linalg::YieldOp::create(nb, nloc, ValueRange{f(s, e[0], e[1])});
        });
    return memref::LoadOp::create(b, loc, acc, ValueRange{});
  }

  /// dst = (x - mean) / sqrt(var + eps) * gamma + beta, over the row.
  void layerNorm(LayerNormOp ln, Value src, Value dst, Value gamma,
                 RowRead gammaRead, Value beta, RowRead betaRead, Value acc) {
    Scalars s(b, loc);
    Value d = s.c(static_cast<double>(width));
    Value mean =
        s.div(fold(src, acc, s.c(0),
                   [](Scalars &s, Value x, Value a) { return s.add(a, x); }),
              d);
    Value var = s.div(fold(src, acc, s.c(0),
                           [&](Scalars &s, Value x, Value a) {
                             Value c = s.sub(x, mean);
                             return s.add(a, s.mul(c, c));
                           }),
                      d);
    Value eps = s.c(ln.getEps().convertToDouble());
    Value rstd = s.div(s.c(1), math::SqrtOp::create(b, loc, s.add(var, eps)));
    linalg::GenericOp::create(
        b, loc, ValueRange{src, gamma, beta}, ValueRange{dst},
        {identity(), map(gammaRead), map(betaRead), identity()},
        both(utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nloc, ValueRange e) {
          Scalars s(nb, nloc);
          Value y = s.add(s.mul(s.mul(s.sub(e[0], mean), rstd), e[1]), e[2]);
          linalg::YieldOp::create(nb, nloc, ValueRange{y});
        });
  }

  /// dst = x * rstd * weight, rstd = 1 / sqrt(mean(x * x) + eps), over the
  /// row. The squares are summed as the runtime's kernel sums them
  /// (runtime/cpu/RmsNorm.cpp): element j into lane j mod 16, the lanes
  /// then in order, so a region and the op alone give the same bits.
  /// `lanes` is kRmsLanes floats on the stack, made once for all rows.
  void rmsNorm(RmsNormOp n, Value src, Value dst, Value weight,
               RowRead weightRead, Value lanes) {
    constexpr int64_t kLanes = kRmsLanes;
    Scalars s(b, loc);
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    Value c16 = arith::ConstantIndexOp::create(b, loc, kLanes);
    auto zero = scf::ForOp::create(b, loc, c0, c16, c1);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(zero.getBody());
      memref::StoreOp::create(b, loc, s.c(0), lanes,
                              ValueRange{zero.getInductionVar()});
    }
    auto squares = scf::ForOp::create(
        b, loc, c0, arith::ConstantIndexOp::create(b, loc, width), c1);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(squares.getBody());
      Value j = squares.getInductionVar();
      Value lane = arith::RemUIOp::create(b, loc, j, c16);
      Value x = memref::LoadOp::create(b, loc, src, ValueRange{c0, j});
      Value acc = memref::LoadOp::create(b, loc, lanes, ValueRange{lane});
      memref::StoreOp::create(b, loc, s.add(acc, s.mul(x, x)), lanes,
                              ValueRange{lane});
    }
    auto total = scf::ForOp::create(b, loc, c0, c16, c1, ValueRange{s.c(0)});
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(total.getBody());
      Value l = memref::LoadOp::create(b, loc, lanes,
                                       ValueRange{total.getInductionVar()});
      scf::YieldOp::create(b, loc,
                           ValueRange{s.add(total.getRegionIterArg(0), l)});
    }
    Value sum = total.getResult(0);
    Value eps = s.c(n.getEps().convertToDouble());
    Value rstd =
        s.div(s.c(1),
              s.sqrt(s.add(s.div(sum, s.c(static_cast<double>(width))), eps)));
    linalg::GenericOp::create(b, loc, ValueRange{src, weight}, ValueRange{dst},
                              {identity(), map(weightRead), identity()},
                              both(utils::IteratorType::parallel),
                              [&](OpBuilder &nb, Location nloc, ValueRange e) {
                                Scalars s(nb, nloc);
                                linalg::YieldOp::create(
                                    nb, nloc,
                                    ValueRange{s.mul(s.mul(e[0], rstd), e[1])});
                              });
  }

  /// `dst` (of tensor type `t`: bf16) = the f32 row `src`, rounded.
  void round(Value src, Value dst, Type t) {
    linalg::GenericOp::create(
        b, loc, ValueRange{src}, ValueRange{dst}, {identity(), identity()},
        both(utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nloc, ValueRange e) {
          Scalars s(nb, nloc);
          linalg::YieldOp::create(nb, nloc, ValueRange{s.toStore(e[0], t)});
        });
  }

  /// dst = exp(x - max) / sum, over the row; a row of -inf gives zeros.
  void softmax(Value src, Value dst, Value acc) {
    Scalars s(b, loc);
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value first = memref::LoadOp::create(b, loc, src, ValueRange{c0, c0});
    Value max = fold(src, acc, first,
                     [](Scalars &s, Value x, Value a) { return s.max(a, x); });
    Value masked =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, max,
                              s.c(-std::numeric_limits<double>::infinity()));
    Value zero = s.c(0);
    memref::StoreOp::create(b, loc, zero, acc, ValueRange{});
    linalg::GenericOp::create(
        b, loc, ValueRange{src}, ValueRange{dst, acc},
        {identity(), identity(), scalar()},
        both(utils::IteratorType::reduction),
        [&](OpBuilder &nb, Location nloc, ValueRange e) {
          Scalars s(nb, nloc);
          Value ex = s.select(masked, s.c(0), s.exp(s.sub(e[0], max)));
          linalg::YieldOp::create(nb, nloc, ValueRange{ex, s.add(e[2], ex)});
        });
    Value total = memref::LoadOp::create(b, loc, acc, ValueRange{});
    Value positive =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, total, zero);
    Value inv = s.select(positive, s.div(s.c(1), total), zero);
    linalg::GenericOp::create(b, loc, ValueRange{}, ValueRange{dst},
                              {identity()}, both(utils::IteratorType::parallel),
                              [&](OpBuilder &nb, Location nloc, ValueRange e) {
                                Scalars s(nb, nloc);
                                linalg::YieldOp::create(
                                    nb, nloc, ValueRange{s.mul(e[0], inv)});
                              });
  }

private:
  OpBuilder &b;
  Location loc;
  FusedOp op;
  ArrayRef<RowRead> reads;
  int64_t width;
};

} // namespace

FusedLaunch buildFusedRowKernel(FusedOp op, ModuleOp kernels, StringRef name) {
  MLIRContext *ctx = op.getContext();
  ctx->getOrLoadDialect<scf::SCFDialect>();
  Location loc = op.getLoc();
  OpBuilder b(ctx);
  SmallVector<int64_t> shape = op.getIterationShape();
  const int64_t width = shape.back();
  int64_t rows = 1;
  for (int64_t d : ArrayRef<int64_t>(shape).drop_back())
    rows *= d;
  Type f32 = b.getF32Type();
  Operation *rowOp = op.getRowOp();
  Block &region = op.getBody().front();
  Operation *yield = region.getTerminator();

  // Inputs whole as [R, D], a row as [1, D], an element as [1, 1];
  // results [R, D].
  SmallVector<RowRead> reads;
  SmallVector<int64_t> periods;
  SmallVector<Type> args;
  for (Type t : op.getInputs().getTypes()) {
    int64_t period = FusedOp::getRowPeriod(t, shape);
    periods.push_back(period);
    reads.push_back(readOf(period));
    args.push_back(
        MemRefType::get({std::max<int64_t>(period, 1),
                         reads.back() == RowRead::Element ? 1 : width},
                        Scalars::memoryElement(t)));
  }
  for (Type t : op.getResultTypes())
    args.push_back(MemRefType::get({rows, width}, Scalars::memoryElement(t)));
  Block *entry = beginKernelBody(b, kernels, name, args, loc);
  const unsigned nIn = op.getNumOperands();
  Value lo = entry->getArgument(args.size());
  Value hi = entry->getArgument(args.size() + 1);
  // The row op's running statistic, one scalar on the stack for all rows.
  Value acc = memref::AllocaOp::create(b, loc, MemRefType::get({}, f32));
  // An RMSNorm's lanes, likewise made once outside the row loop (an alloca
  // inside it is one per row unless LLVM hoists it).
  Value lanes;
  if (isa<RmsNormOp>(rowOp))
    lanes = memref::AllocaOp::create(b, loc, MemRefType::get({kRmsLanes}, f32));
  // Where the region rounds the row op's result, its f32 row is kept here
  // (the dialect bounds its width: FusedOp::kMaxRoundedRowWidth).
  Operation *rounding = FusedOp::getRowRounding(rowOp);
  Value rowScratch;
  if (rounding)
    rowScratch =
        memref::AllocaOp::create(b, loc, MemRefType::get({1, width}, f32));
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(b, loc, lo, hi, one);
  b.setInsertionPointToStart(loop.getBody());
  Value r = loop.getInductionVar();

  auto rowOf = [&](Value whole, int64_t period) -> Value {
    // Rows that repeat along the iteration: this one's is r mod period.
    Value at = r;
    if (period != rows)
      at = arith::RemUIOp::create(
          b, loc, r, arith::ConstantIndexOp::create(b, loc, period));
    SmallVector<OpFoldResult> offsets{at, b.getIndexAttr(0)},
        sizes{b.getIndexAttr(1), b.getIndexAttr(width)},
        strides{b.getIndexAttr(1), b.getIndexAttr(1)};
    return memref::SubViewOp::create(b, loc, whole, offsets, sizes, strides);
  };
  SmallVector<Value> inputs, outs;
  for (unsigned i = 0; i < nIn; ++i)
    inputs.push_back(reads[i] == RowRead::Rows
                         ? rowOf(entry->getArgument(i), periods[i])
                         : entry->getArgument(i));
  for (unsigned i = 0; i < op.getNumResults(); ++i)
    outs.push_back(rowOf(entry->getArgument(nIn + i), rows));

  // The row op's output row (or the f32 row a rounding rounds into the
  // result, `rounded`); its input's row: a result's, or the output row
  // itself as scratch, written by the elementwise loop.
  Value rowIn = rowOp->getOperand(0);
  // (Both are f32: the row op's input and result are.)
  Value dst, src, rounded;
  Type roundedType;
  SmallVector<Value> written, writtenTo;
  SmallVector<Type> writtenTypes;
  for (auto [i, v] : llvm::enumerate(yield->getOperands())) {
    if (v == rowOp->getResult(0)) {
      dst = outs[i];
      continue;
    }
    if (rounding && v == rounding->getResult(0)) {
      dst = rowScratch;
      rounded = outs[i];
      roundedType = v.getType();
      continue;
    }
    written.push_back(v);
    writtenTo.push_back(outs[i]);
    writtenTypes.push_back(v.getType());
    if (v == rowIn)
      src = outs[i];
  }
  if (!src) {
    written.push_back(rowIn);
    writtenTo.push_back(dst);
    writtenTypes.push_back(rowIn.getType());
    src = dst;
  }
  RowBody body(b, loc, op, reads, width);
  body.elementwise(inputs, written, writtenTo, writtenTypes, rounding);
  if (auto ln = dyn_cast<LayerNormOp>(rowOp)) {
    auto arg = [&](Value v) { return cast<BlockArgument>(v).getArgNumber(); };
    unsigned g = arg(ln.getGamma()), be = arg(ln.getBeta());
    body.layerNorm(ln, src, dst, inputs[g], reads[g], inputs[be], reads[be],
                   acc);
  } else if (auto rms = dyn_cast<RmsNormOp>(rowOp)) {
    unsigned w = cast<BlockArgument>(rms.getWeight()).getArgNumber();
    body.rmsNorm(rms, src, dst, inputs[w], reads[w], lanes);
  } else {
    body.softmax(src, dst, acc);
  }
  if (rounded)
    body.round(dst, rounded, roundedType);

  b.setInsertionPointAfter(loop);
  func::ReturnOp::create(b, loc);
  FusedLaunch launch;
  launch.rows = rows;
  launch.rowElements = width;
  return launch;
}

} // namespace whale
