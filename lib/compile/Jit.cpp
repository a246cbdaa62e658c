//===- Jit.cpp - whale IR to native code bound to the runtime -------------===//

#include "lib/compile/Jit.h"

#include "lib/compile/DataSpec.h"
#include "lib/compile/PassErrors.h"

#include "lowering/Passes.h"
#include "lowering/Transforms/Fusion/FusedKernel.h"
#include "support/VectorLevel.h"

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
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>

namespace whale {

whale_rt_tensor *newTensor(whale_rt_context *ctx, mlir::RankedTensorType type,
                           std::string &error) {
  TensorSpec spec;
  if (!tensorSpecOf(type, spec, error))
    return nullptr;
  return newTensor(ctx, spec, error);
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
#define WHALE_RT_ABI(name) add(#name, &name);
#include "runtime/AbiSymbols.def"
  return map;
}

} // namespace

LoweredModule lowerToLLVM(mlir::ModuleOp module, llvm::LLVMContext &llvmContext,
                          std::string &error, bool sites) {
  mlir::MLIRContext *ctx = module.getContext();
  mlir::registerBuiltinDialectTranslation(*ctx);
  mlir::registerLLVMDialectTranslation(*ctx);
  mlir::OwningOpRef<mlir::ModuleOp> lowered = module.clone();

  PassErrors errors(ctx);
  LoweredModule out;
  mlir::PassManager pm(ctx);
  WhaleToRuntimeOptions lowering;
  lowering.sites = sites;
  pm.addPass(createWhaleToRuntime(lowering));
  if (mlir::failed(pm.run(*lowered))) {
    error = errors.text("lowering to the runtime failed");
    return out;
  }
  // The fused regions' kernels leave the program for a module of their own.
  mlir::OwningOpRef<mlir::ModuleOp> kernels;
  for (auto nested : lowered->getOps<mlir::ModuleOp>())
    if (nested.getSymName() == kKernelModule) {
      kernels = nested.clone();
      nested.erase();
      break;
    }
  if (kernels) {
    if (mlir::failed(lowerFusedKernels(*kernels))) {
      if (error.empty())
        error = "lowering the fused regions' kernels failed";
      return out;
    }
    out.kernels = mlir::translateModuleToLLVMIR(*kernels, llvmContext,
                                                "whale_kernels");
    if (!out.kernels) {
      if (error.empty())
        error = "translating the fused regions' kernels to LLVM IR failed";
      return out;
    }
  }
  out.program = mlir::translateModuleToLLVMIR(*lowered, llvmContext);
  if (!out.program && error.empty())
    error = "translating to LLVM IR failed";
  return out;
}

/// The target the JIT builds the fused kernels for.
static llvm::Expected<llvm::orc::JITTargetMachineBuilder>
kernelTargetMachineBuilder() {
  auto host = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!host || !host->getTargetTriple().isX86())
    return host;
  const VectorLevel level = kernelVectorLevel();
  if (level == hardwareVectorLevel())
    return host;
  // The level's own CPU name and nothing of the host's features: code
  // built for x86-64-v3 on a CPU with AVX-512 uses no AVX-512.
  host->setCPU(llvmCpuForLevel(level));
  host->getFeatures() = llvm::SubtargetFeatures();
  return host;
}

std::string emitObjectCode(llvm::Module &module, llvm::TargetMachine &machine,
                           bool optimize, llvm::SmallVectorImpl<char> &object) {
  module.setDataLayout(machine.createDataLayout());
  module.setTargetTriple(machine.getTargetTriple());
  if (optimize) {
    // The kernels' loops are vectorized here, for the machine's vector
    // registers; nothing in MLIR's lowering has chosen a width.
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder builder(&machine);
    builder.registerModuleAnalyses(mam);
    builder.registerCGSCCAnalyses(cgam);
    builder.registerFunctionAnalyses(fam);
    builder.registerLoopAnalyses(lam);
    builder.crossRegisterProxies(lam, fam, cgam, mam);
    builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3)
        .run(module, mam);
  }
  llvm::raw_svector_ostream out(object);
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, out, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return "the code generator cannot write object files";
  codegen.run(module);
  return "";
}

JitProgram::~JitProgram() = default;

std::unique_ptr<JitProgram>
JitProgram::compile(mlir::ModuleOp module, std::string &error, bool sites) {
  static std::once_flag targetOnce;
  std::call_once(targetOnce, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });

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
  LoweredModule lowered = lowerToLLVM(module, *llvmContext, error, sites);
  if (!lowered.program)
    return nullptr;
  std::unique_ptr<llvm::Module> llvmModule = std::move(lowered.program);
  auto fail = [&](llvm::Error e) {
    error = llvm::toString(std::move(e));
    return nullptr;
  };
  if (std::string bad = checkVectorLevelSetting(); !bad.empty()) {
    error = bad;
    return nullptr;
  }
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
  // The kernels, optimized for this host's CPU (its vector width), or for
  // the lower level WHALE_CPU_LEVEL holds them to.
  if (lowered.kernels) {
    auto host = kernelTargetMachineBuilder();
    if (!host)
      return fail(host.takeError());
    host->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    auto kernelMachine = host->createTargetMachine();
    if (!kernelMachine)
      return fail(kernelMachine.takeError());
    llvm::SmallVector<char, 0> object;
    if (std::string err =
            emitObjectCode(*lowered.kernels, **kernelMachine, true, object);
        !err.empty()) {
      error = err;
      return nullptr;
    }
    if (llvm::Error e = (*jit)->addObjectFile(
            llvm::MemoryBuffer::getMemBufferCopy(
                llvm::StringRef(object.data(), object.size()),
                "whale_kernels")))
      return fail(std::move(e));
  }
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
