//===- Jit.cpp - whale IR to native code bound to the runtime -------------===//

#include "lib/Jit.h"

#include "lowering/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"

#include <mutex>

namespace whale {

whale_rt_tensor *newTensor(whale_rt_context *ctx, mlir::RankedTensorType type,
                           std::string &error) {
  mlir::Type e = type.getElementType();
  int32_t dtype = e.isF32()         ? WHALE_RT_F32
                  : e.isInteger(32) ? WHALE_RT_I32
                                    : -1;
  if (dtype < 0) {
    error = "inputs are f32 or i32 tensors for now";
    return nullptr;
  }
  whale_rt_tensor *t = nullptr;
  if (whale_rt_tensor_create(ctx, dtype, type.getRank(), type.getShape().data(),
                             &t) != WHALE_RT_OK) {
    error = whale_rt_last_error(ctx);
    return nullptr;
  }
  return t;
}

namespace {

/// Every function of the C ABI that lowered code may call.
llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap map;
  auto add = [&](const char *name, auto *fn) {
    map[interner(name)] = {
        llvm::orc::ExecutorAddr::fromPtr(reinterpret_cast<void *>(fn)),
        llvm::JITSymbolFlags::Exported};
  };
  add("whale_rt_tensor_create", &whale_rt_tensor_create);
  add("whale_rt_tensor_release", &whale_rt_tensor_release);
  add("whale_rt_set_site", &whale_rt_set_site);
  add("whale_rt_param", &whale_rt_param);
  add("whale_rt_fill", &whale_rt_fill);
  add("whale_rt_matmul", &whale_rt_matmul);
  add("whale_rt_binary", &whale_rt_binary);
  add("whale_rt_unary", &whale_rt_unary);
  add("whale_rt_softmax", &whale_rt_softmax);
  add("whale_rt_causal_mask", &whale_rt_causal_mask);
  add("whale_rt_layernorm", &whale_rt_layernorm);
  add("whale_rt_embedding", &whale_rt_embedding);
  add("whale_rt_cross_entropy", &whale_rt_cross_entropy);
  add("whale_rt_reduce", &whale_rt_reduce);
  add("whale_rt_reshape", &whale_rt_reshape);
  add("whale_rt_transpose", &whale_rt_transpose);
  add("whale_rt_slice", &whale_rt_slice);
  add("whale_rt_concat", &whale_rt_concat);
  add("whale_rt_broadcast", &whale_rt_broadcast);
  add("whale_rt_matmul_grad", &whale_rt_matmul_grad);
  add("whale_rt_binary_grad", &whale_rt_binary_grad);
  add("whale_rt_unary_grad", &whale_rt_unary_grad);
  add("whale_rt_softmax_grad", &whale_rt_softmax_grad);
  add("whale_rt_attention", &whale_rt_attention);
  add("whale_rt_attention_grad", &whale_rt_attention_grad);
  add("whale_rt_causal_mask_grad", &whale_rt_causal_mask_grad);
  add("whale_rt_layernorm_grad", &whale_rt_layernorm_grad);
  add("whale_rt_embedding_grad", &whale_rt_embedding_grad);
  add("whale_rt_cross_entropy_grad", &whale_rt_cross_entropy_grad);
  add("whale_rt_reduce_grad", &whale_rt_reduce_grad);
  add("whale_rt_slice_grad", &whale_rt_slice_grad);
  add("whale_rt_sgd_update", &whale_rt_sgd_update);
  add("whale_rt_adam_update", &whale_rt_adam_update);
  add("whale_rt_clip_grad_norm", &whale_rt_clip_grad_norm);
  add("whale_rt_set_train_state", &whale_rt_set_train_state);
  add("whale_rt_sgd_step", &whale_rt_sgd_step);
  add("whale_rt_adam_step", &whale_rt_adam_step);
  add("whale_rt_send", &whale_rt_send);
  add("whale_rt_recv", &whale_rt_recv);
  add("whale_rt_all_reduce", &whale_rt_all_reduce);
  add("whale_rt_clip_grad_norm_group", &whale_rt_clip_grad_norm_group);
  add("whale_rt_param_shard", &whale_rt_param_shard);
  add("whale_rt_all_gather", &whale_rt_all_gather);
  add("whale_rt_shard_slice", &whale_rt_shard_slice);
  add("whale_rt_shard_sum", &whale_rt_shard_sum);
  add("whale_rt_all_reduce_peers", &whale_rt_all_reduce_peers);
  add("whale_rt_sharded_cross_entropy", &whale_rt_sharded_cross_entropy);
  add("whale_rt_sharded_cross_entropy_grad",
      &whale_rt_sharded_cross_entropy_grad);
  add("whale_rt_clip_grad_norm_sharded", &whale_rt_clip_grad_norm_sharded);
  return map;
}

} // namespace

JitProgram::~JitProgram() = default;

std::unique_ptr<JitProgram> JitProgram::compile(mlir::ModuleOp module,
                                                std::string &error,
                                                bool sites) {
  static std::once_flag targetOnce;
  std::call_once(targetOnce, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });

  mlir::MLIRContext *ctx = module.getContext();
  mlir::registerBuiltinDialectTranslation(*ctx);
  mlir::registerLLVMDialectTranslation(*ctx);
  mlir::OwningOpRef<mlir::ModuleOp> lowered = module.clone();

  // Diagnostics of the lowering become the error string.
  mlir::ScopedDiagnosticHandler handler(ctx, [&](mlir::Diagnostic &d) {
    if (error.empty())
      error = d.str();
    return mlir::success();
  });
  mlir::PassManager pm(ctx);
  WhaleToRuntimeOptions lowering;
  lowering.sites = sites;
  pm.addPass(createWhaleToRuntime(lowering));
  if (mlir::failed(pm.run(*lowered))) {
    if (error.empty())
      error = "lowering to the runtime failed";
    return nullptr;
  }

  // Native code through LLJIT directly rather than mlir::ExecutionEngine,
  // whose jitCodeGenOptLevel does not reach the code generator (MLIR 22).
  // A step function is a long straight run of runtime calls, and the
  // optimizing register allocator is superlinear in its length: a script of
  // 400 TaskGraphs took 12.6 s and 1 GB to compile, 50 of them 0.8 s. The
  // fast allocator is linear, and the calls' own work dwarfs what the
  // optimizing one saves: examples/gpt.whl trains about as fast either way
  // (60 steps in a mean of 6.04 s against 5.88 s optimized, five runs each,
  // alternating, on the 2-core machine, whose noise is as large).
  auto llvmContext = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(*lowered, *llvmContext);
  if (!llvmModule) {
    if (error.empty())
      error = "translating to LLVM IR failed";
    return nullptr;
  }
  auto fail = [&](llvm::Error e) {
    error = llvm::toString(std::move(e));
    return nullptr;
  };
  auto machine = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machine)
    return fail(machine.takeError());
  machine->setCodeGenOptLevel(llvm::CodeGenOptLevel::None);
  auto jit =
      llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*machine).create();
  if (!jit)
    return fail(jit.takeError());
  llvm::orc::JITDylib &dylib = (*jit)->getMainJITDylib();
  llvm::orc::MangleAndInterner interner((*jit)->getExecutionSession(),
                                        (*jit)->getDataLayout());
  if (llvm::Error e =
          dylib.define(llvm::orc::absoluteSymbols(runtimeSymbols(interner))))
    return fail(std::move(e));
  // What lowered code takes from the C library (memcpy, malloc).
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return fail(process.takeError());
  dylib.addGenerator(std::move(*process));
  llvmModule->setDataLayout((*jit)->getDataLayout());
  llvmModule->setTargetTriple((*jit)->getTargetTriple());
  if (llvm::Error e = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(
          std::move(llvmModule), std::move(llvmContext))))
    return fail(std::move(e));
  if (llvm::Error e = (*jit)->initialize(dylib))
    return fail(std::move(e));
  std::unique_ptr<JitProgram> program(new JitProgram());
  program->jit = std::move(*jit);
  return program;
}

JitProgram::Entry JitProgram::lookup(const std::string &name) const {
  llvm::Expected<llvm::orc::ExecutorAddr> fn = jit->lookup(name);
  if (!fn) {
    llvm::consumeError(fn.takeError());
    return nullptr;
  }
  return fn->toPtr<Entry>();
}

} // namespace whale
