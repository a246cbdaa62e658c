//===- RuntimeCalls.cpp - Emitting calls of the runtime's C ABI -----------===//

#include "lowering/Conversion/ToRuntime/RuntimeCalls.h"

#include "dialects/Whale/IR/TrainAttrs.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace whale;

RuntimeSymbols::RuntimeSymbols(ModuleOp module) : module(module) {}

LLVM::LLVMFuncOp RuntimeSymbols::declare(StringRef name, Type result,
                                         ArrayRef<Type> params) {
  LLVM::LLVMFuncOp &f = functions[name];
  if (!f)
    f = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
  if (!f) {
    auto b = OpBuilder::atBlockBegin(module.getBody());
    f = LLVM::LLVMFuncOp::create(b, module.getLoc(), name,
                                 LLVM::LLVMFunctionType::get(result, params));
  }
  return f;
}

LLVM::GlobalOp RuntimeSymbols::global(const std::string &key, Type type,
                                      Attribute value) {
  LLVM::GlobalOp &g = globals[key];
  if (!g) {
    auto b = OpBuilder::atBlockBegin(module.getBody());
    g = LLVM::GlobalOp::create(
        b, module.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::Internal,
        "__whale_const_" + std::to_string(globals.size()), value);
  }
  return g;
}

RuntimeCalls::RuntimeCalls(ConversionPatternRewriter &rewriter, Location loc,
                           RuntimeSymbols &symbols, const LoweringPlan &plan,
                           Value ctx, Value slot)
    : rewriter(rewriter), loc(loc), plan(plan), ctx(ctx), symbols(symbols),
      slot(slot), ptr(LLVM::LLVMPointerType::get(rewriter.getContext())),
      i32Type(rewriter.getI32Type()), i64Type(rewriter.getI64Type()),
      f64Type(rewriter.getF64Type()),
      shardGroup(static_cast<int32_t>(
          settingsOf(rewriter.getInsertionBlock()->getParentOp())
              .shardingGroup())) {}

Value RuntimeCalls::i32(int64_t v) {
  return LLVM::ConstantOp::create(rewriter, loc, i32Type,
                                  rewriter.getI32IntegerAttr(v));
}
Value RuntimeCalls::i64(int64_t v) {
  return LLVM::ConstantOp::create(rewriter, loc, i64Type,
                                  rewriter.getI64IntegerAttr(v));
}
Value RuntimeCalls::f64(double v) {
  return LLVM::ConstantOp::create(rewriter, loc, f64Type,
                                  rewriter.getF64FloatAttr(v));
}
Value RuntimeCalls::null() { return LLVM::ZeroOp::create(rewriter, loc, ptr); }

Value RuntimeCalls::global(const std::string &key, Type type, Attribute value) {
  return LLVM::AddressOfOp::create(rewriter, loc,
                                   symbols.global(key, type, value));
}

Value RuntimeCalls::i64Array(ArrayRef<int64_t> values) {
  if (values.empty())
    return null();
  std::string key = "i64";
  for (int64_t v : values)
    key += "," + std::to_string(v);
  auto type = LLVM::LLVMArrayType::get(i64Type, values.size());
  return global(key, type, rewriter.getI64TensorAttr(values));
}

Value RuntimeCalls::i32Array(ArrayRef<int32_t> values) {
  if (values.empty())
    return null();
  std::string key = "i32";
  for (int32_t v : values)
    key += "," + std::to_string(v);
  auto type = LLVM::LLVMArrayType::get(i32Type, values.size());
  return global(key, type, rewriter.getI32TensorAttr(values));
}

Value RuntimeCalls::f64Array(ArrayRef<double> values) {
  if (values.empty())
    return null();
  std::string key = "f64";
  for (double v : values)
    key += "," + std::to_string(v);
  auto type = LLVM::LLVMArrayType::get(f64Type, values.size());
  auto shape =
      RankedTensorType::get({static_cast<int64_t>(values.size())}, f64Type);
  return global(key, type, DenseElementsAttr::get(shape, values));
}

Value RuntimeCalls::string(StringRef s) {
  std::string withNul = s.str() + '\0';
  auto type = LLVM::LLVMArrayType::get(rewriter.getI8Type(), withNul.size());
  return global("str:" + s.str(), type, rewriter.getStringAttr(withNul));
}

Value RuntimeCalls::weights(std::optional<ArrayRef<int64_t>> weights) {
  return weights ? i64Array(*weights) : null();
}

Value RuntimeCalls::handleArray(ValueRange handles) {
  int64_t n = handles.size();
  Value array = LLVM::AllocaOp::create(rewriter, loc, ptr, ptr,
                                       i64(std::max<int64_t>(n, 1)));
  for (int64_t i = 0; i < n; ++i) {
    Value at =
        LLVM::GEPOp::create(rewriter, loc, ptr, ptr, array,
                            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
    LLVM::StoreOp::create(rewriter, loc, handles[i], at);
  }
  return array;
}

Type RuntimeCalls::typeOf(abi::Kind kind) {
  // In abi::Kind's order.
  const Type types[] = {LLVM::LLVMVoidType::get(rewriter.getContext()), i32Type,
                        i64Type, f64Type, ptr};
  return types[static_cast<size_t>(kind)];
}

LLVM::LLVMFuncOp RuntimeCalls::runtimeFn(const abi::Function &fn,
                                         ValueRange args) {
  SmallVector<Type> params;
  for (size_t i = 0; i < fn.arity; ++i)
    params.push_back(typeOf(fn.params[i]));
  // A mismatch is the lowering's own bug: it fails the pass with the call
  // and the argument named, rather than emit a call the runtime would read
  // wrongly.
  if (args.size() != params.size()) {
    emitError(loc) << "internal error: the lowering calls " << fn.name
                   << " with " << args.size()
                   << " arguments, runtime/WhaleRuntime.h declares "
                   << params.size();
    symbols.abiMismatch = true;
  } else {
    for (auto [i, a] : llvm::enumerate(args))
      if (a.getType() != params[i]) {
        emitError(loc) << "internal error: argument " << i << " of " << fn.name
                       << " is " << a.getType()
                       << ", runtime/WhaleRuntime.h declares " << params[i];
        symbols.abiMismatch = true;
      }
  }
  return symbols.declare(fn.name, typeOf(fn.result), params);
}

void RuntimeCalls::call(const abi::Function &fn, ArrayRef<Value> args) {
  assert(fn.result == abi::Kind::I32 &&
         "a call that can fail returns a status");
  auto op = LLVM::CallOp::create(rewriter, loc, runtimeFn(fn, args), args);
  op->setAttr(kStatusCallAttr, rewriter.getUnitAttr());
}

void RuntimeCalls::callVoid(const abi::Function &fn, ArrayRef<Value> args) {
  assert(fn.result == abi::Kind::Void && "a status must be checked");
  LLVM::CallOp::create(rewriter, loc, runtimeFn(fn, args), args);
}

Value RuntimeCalls::slotHandle() {
  return LLVM::LoadOp::create(rewriter, loc, ptr, slot);
}

Value RuntimeCalls::tensor(RankedTensorType type) {
  Type e = type.getElementType();
  int32_t dtype = e.isF32()         ? WHALE_RT_F32
                  : e.isF64()       ? WHALE_RT_F64
                  : e.isInteger(32) ? WHALE_RT_I32
                  : e.isInteger(64) ? WHALE_RT_I64
                                    : WHALE_RT_BF16;
  assert((dtype != WHALE_RT_BF16 || e.isBF16()) &&
         "the plan refuses element types the runtime lacks");
  call(WHALE_RT_FN(tensor_create),
       {ctx, i32(dtype), i32(type.getRank()), i64Array(type.getShape()), slot});
  return slotHandle();
}

Handles RuntimeCalls::tensorsFor(Operation *op) {
  Handles outs;
  for (Type t : op->getResultTypes())
    outs.push_back(tensor(cast<RankedTensorType>(t)));
  return outs;
}

Handles RuntimeCalls::callOnOperandsAndResults(Operation *op, ValueRange in,
                                               const abi::Function &fn) {
  Handles outs = tensorsFor(op);
  SmallVector<Value> args = {ctx};
  args.append(in.begin(), in.end());
  args.append(outs.begin(), outs.end());
  call(fn, args);
  return outs;
}

Value RuntimeCalls::requestSlot() {
  return LLVM::AllocaOp::create(rewriter, loc, ptr, rewriter.getI64Type(),
                                i64(1));
}

Value RuntimeCalls::requestIn(Value slot) {
  return LLVM::LoadOp::create(rewriter, loc, rewriter.getI64Type(), slot);
}

int32_t RuntimeCalls::groupKind(StringRef group) {
  return group == "stages" ? WHALE_RT_GROUP_STAGES : WHALE_RT_GROUP_REPLICAS;
}

int32_t RuntimeCalls::groupCode(std::optional<int64_t> shards,
                                StringRef group) const {
  const int32_t base = shards ? WHALE_RT_GROUP_SHARD_PEERS : groupKind(group);
  if (group != "hsdp")
    return base;
  // The verifiers and -whale-shard-optimizer checked that the shards
  // divide the sharding group.
  return WHALE_RT_GROUP_SHARDING(
      base, shards ? shardGroup / static_cast<int32_t>(*shards) : shardGroup);
}

void RuntimeCalls::onOwner(Operation *op, llvm::function_ref<void()> update) {
  onOwner(op, update, nullptr);
}

void RuntimeCalls::onOwner(Operation *op, llvm::function_ref<void()> update,
                           llvm::function_ref<void()> elsewhere) {
  auto owner = op->getAttrOfType<IntegerAttr>("owner");
  if (!owner) {
    update();
    return;
  }
  auto group = op->getAttrOfType<StringAttr>("group");
  auto shards = op->getAttrOfType<IntegerAttr>("shards");
  Value mine = LLVM::AllocaOp::create(rewriter, loc, ptr, i32Type, i64(1));
  call(WHALE_RT_FN(owns),
       {ctx,
        i32(groupCode(shards ? std::optional<int64_t>(shards.getInt())
                             : std::nullopt,
                      group.getValue())),
        i32(shards ? shards.getInt() : 0), i32(owner.getInt()), mine});
  Value isMine = LLVM::ICmpOp::create(
      rewriter, loc, LLVM::ICmpPredicate::ne,
      LLVM::LoadOp::create(rewriter, loc, i32Type, mine), i32(0));
  // Structured here, blocks once every op is converted (status checks).
  auto ifMine = scf::IfOp::create(rewriter, loc, isMine,
                                  /*withElseRegion=*/bool(elsewhere));
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(ifMine.thenBlock()->getTerminator());
  update();
  if (elsewhere) {
    rewriter.setInsertionPoint(ifMine.elseBlock()->getTerminator());
    elsewhere();
  }
}
