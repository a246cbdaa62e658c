//===- Bundle.cpp - a plan compiled ahead of time -------------------------===//

#include "lib/compile/Bundle.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "lib/compile/Cluster.h"
#include "lib/compile/DataSpec.h"
#include "lib/compile/Jit.h"
#include "lib/compile/LrSchedule.h"
#include "lib/compile/ModelLookup.h"
#include "lib/compile/Planner.h"
#include "lib/compile/StageSignature.h"
#include "runtime/bundle/PlanManifest.h"
#include "runtime/checkpoint/CheckpointSet.h"
#include "runtime/run/CpuLevels.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <mutex>
#include <vector>

namespace whale {
namespace {

/// A code generator for the host's architecture at `cpu`: "generic" (its
/// baseline) for what must run on any machine of that architecture, an
/// x86-64 level for the kernels' variants (runtime/run/CpuLevels.h).
/// Null with `error` set when there is none.
std::unique_ptr<llvm::TargetMachine> machineFor(const std::string &cpu,
                                                llvm::CodeGenOptLevel level,
                                                std::string &error) {
  static std::once_flag targetOnce;
  std::call_once(targetOnce, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    error = "no code generator for " + triple.str() + ": " + error;
    return nullptr;
  }
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(triple, cpu, "", llvm::TargetOptions(),
                                  llvm::Reloc::PIC_, std::nullopt, level));
  if (!machine)
    error = "cannot make a code generator for " + triple.str();
  return machine;
}

/// `bytes` written to `path`; "" or why not.
std::string writeFile(const std::string &path, llvm::StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return "cannot write '" + path + "': " + ec.message();
  out << bytes;
  out.close();
  if (out.has_error()) {
    std::string why = out.error().message();
    // Cleared, or the stream's destructor ends the process with a bare
    // "LLVM ERROR: IO failure on output stream".
    out.clear_error();
    return "cannot write '" + path + "': " + why;
  }
  return "";
}

/// `module` as a position-independent object file at `path`: the program
/// (a run of calls into the runtime) by the fast code generator, the fused
/// regions' kernels (`optimize`) by the optimizing one after LLVM's O3.
std::string emitObject(llvm::Module &module, const std::string &path,
                       bool optimize, const std::string &cpu = "generic") {
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      machineFor(cpu,
                 optimize ? llvm::CodeGenOptLevel::Aggressive
                          : llvm::CodeGenOptLevel::None,
                 error);
  if (!machine)
    return error;
  llvm::SmallVector<char, 0> object;
  if (std::string err = emitObjectCode(module, *machine, optimize, object);
      !err.empty())
    return err;
  return writeFile(path, llvm::StringRef(object.data(), object.size()));
}

/// Links `objects` into shared object `library` with the system's C
/// compiler driver; the runtime's symbols stay undefined, for the runner
/// that loads it to provide.
std::string linkShared(const std::vector<std::string> &objects,
                       const std::string &library) {
  llvm::ErrorOr<std::string> driver =
      std::make_error_code(std::errc::no_such_file_or_directory);
  for (const char *name : {"cc", "gcc", "clang"})
    if ((driver = llvm::sys::findProgramByName(name)))
      break;
  if (!driver)
    return "linking the rank programs needs a C compiler driver (cc, gcc or "
           "clang) on the PATH";
  llvm::SmallString<128> log;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("whale-link", "log", log))
    return "cannot make a temporary file: " + ec.message();
  std::string logPath = log.str().str();
  llvm::SmallVector<llvm::StringRef, 8> args = {*driver, "-shared", "-o",
                                                library};
  for (const std::string &object : objects)
    args.push_back(object);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath, logPath};
  std::string why;
  int rc = llvm::sys::ExecuteAndWait(*driver, args, std::nullopt, redirects, 0,
                                     0, &why);
  std::string output;
  if (auto buffer = llvm::MemoryBuffer::getFile(logPath))
    output = (*buffer)->getBuffer().trim().str();
  llvm::sys::fs::remove(logPath);
  if (rc != 0)
    return "linking '" + library + "' with " + *driver + " failed" +
           (why.empty() ? "" : ": " + why) +
           (output.empty() ? "" : ":\n" + output);
  return "";
}

/// `module` lowered, compiled and linked into `dir`/`file`; "" or why not.
std::string compileShared(mlir::ModuleOp module, const std::string &dir,
                          const std::string &file, bool sites) {
  std::string error;
  llvm::LLVMContext llvmContext;
  LoweredModule lowered = lowerToLLVM(module, llvmContext, error, sites);
  if (!lowered.program)
    return error;
  llvm::SmallString<256> object(dir), kernels(dir), library(dir);
  llvm::sys::path::append(object, file + ".o");
  llvm::sys::path::append(kernels, file + ".kernels.o");
  llvm::sys::path::append(library, file);
  std::vector<std::string> objects = {object.str().str()};
  std::string err = emitObject(*lowered.program, objects[0], false);
  if (err.empty() && lowered.kernels) {
    // Optimizing changes a module: each target gets a copy of the
    // unoptimized one, to vectorize at its own width.
    objects.push_back(kernels.str().str());
    err = emitObject(*llvm::CloneModule(*lowered.kernels), objects[1], true);
  }
  if (err.empty())
    err = linkShared(objects, library.str().str());
  // The kernels again for each x86-64 level above the baseline
  // (runtime/run/CpuLevels.h), each linked with the same programs.
  const bool x86 = llvm::Triple(llvm::sys::getDefaultTargetTriple()).isX86();
  for (const char *level : kCpuLevels) {
    if (!err.empty() || !lowered.kernels || !x86)
      break;
    llvm::SmallString<256> variant(dir);
    llvm::sys::path::append(variant, cpuLevelFile(file, level));
    err = emitObject(*llvm::CloneModule(*lowered.kernels), objects[1], true,
                     level);
    if (err.empty())
      err = linkShared(objects, variant.str().str());
  }
  for (const std::string &o : objects)
    llvm::sys::fs::remove(o);
  return err;
}

} // namespace

bool compileBundle(Interpreter &interp, const TrainOptions &options,
                   const std::string &finalDir, BundleReport &report,
                   std::string &error) {
  auto phase = [&](const std::string &what) {
    if (options.onPhase)
      options.onPhase(what);
  };
  Cluster cluster;
  // The devices need not be on this machine: a plan for GPUs compiles here
  // and runs where they are (whale-exec opens them).
  if (!parseCluster(options.cluster.empty() ? "cpu:1" : options.cluster,
                    cluster, error))
    return false;
  mlir::func::FuncOp model =
      findModel(interp, options.model, /*needsTrainBlock=*/true, error);
  if (!model)
    return false;
  PlanManifest m;
  m.settings = trainSettings(model, options.steps, options.seed);
  m.ampBf16 = ampBf16(model);
  if (!dataSpecOf(model, "data", m.data, error))
    return false;
  if (std::string err = m.settings.checkLength(m.data.batch); !err.empty()) {
    error = err;
    return false;
  }

  PlanOptions planOptions;
  planOptions.even = options.evenPlan;
  planOptions.ampStorage = options.ampStorage;
  const int shared = sharedThreads(cluster, options.threads);
  planOptions.defaultThreads = shared;
  PlannedModel plan;
  phase("planning the model over " + std::to_string(cluster.devices.size()) +
        " devices");
  if (!planModel(interp, options.model, cluster, planOptions, plan, error))
    return false;
  m.model = plan.model;
  m.stages = plan.stages;
  m.replicas = plan.replicas;
  m.globalBatch = plan.globalBatch;
  m.grid = plan.grid;
  m.localBatches = plan.replicaRows();
  m.rowGroup = plan.rowGroup;
  const std::vector<RankPlace> places = devicePlaces(cluster);
  for (size_t i = 0; i < cluster.devices.size(); ++i) {
    const DeviceSpec &spec = cluster.devices[i];
    // Threads the cluster leaves open are the running machine's to share.
    m.devices.push_back({runtimeDeviceName(spec, i), spec.threads, spec.memory,
                         places[i].node, places[i].device});
  }

  // Compiled into a staging folder and swapped in whole: a full disk or a
  // kill leaves the previous bundle as it was (runtime/store/
  // CheckpointSet.h), never half of each.
  if (std::string err =
          rt::beginCheckpointSet(finalDir, rt::FolderKind::CompiledPlan);
      !err.empty()) {
    error = err;
    return false;
  }
  struct Abandon {
    const std::string &dir;
    bool keep = false;
    ~Abandon() {
      if (!keep)
        rt::abandonCheckpointSet(dir);
    }
  } abandon{finalDir};
  const std::string dir = rt::stagingFolder(finalDir);
  // One shared object per module of rank programs (one per micro-batch
  // size), each with its stages' entry points.
  std::vector<mlir::ModuleOp> modules = {*plan.ranks};
  for (const RankVariant &v : plan.others)
    modules.push_back(*v.ranks);
  phase("compiling the rank programs");
  for (size_t k = 0; k < modules.size(); ++k) {
    ProgramLibrary lib;
    lib.file = "ranks-" + std::to_string(k) + ".so";
    for (int64_t s = 0; s < plan.stages; ++s) {
      std::string name = plan.model + "_stage" + std::to_string(s);
      auto fn = modules[k].lookupSymbol<mlir::func::FuncOp>(name);
      if (!fn) {
        error = "no rank program for stage " + std::to_string(s);
        return false;
      }
      lib.stages.emplace_back();
      if (!describeStage(fn, lib.stages.back(), error))
        return false;
    }
    if (std::string err = compileShared(modules[k], dir, lib.file,
                                        options.traceSites);
        !err.empty()) {
      error = "compiling the rank programs failed: " + err;
      return false;
    }
    m.libraries.push_back(std::move(lib));
  }
  // Held-out evaluation: the model's forward pass for the host, as
  // `whale run` compiles it, over eval_data.
  if (m.settings.evalEvery > 0) {
    EvalProgram eval{"eval.so", plan.model, DataSpec()};
    if (!dataSpecOf(model, "eval_data", eval.data, error))
      return false;
    mlir::OwningOpRef<mlir::ModuleOp> forward = hostForward(interp);
    if (!forward) {
      error = "compiling the held-out evaluation failed";
      return false;
    }
    if (std::string err = compileShared(*forward, dir, eval.file, false);
        !err.empty()) {
      error = "compiling the held-out evaluation failed: " + err;
      return false;
    }
    m.eval = std::move(eval);
  }
  for (int64_t r = 0; r < plan.replicas; ++r) {
    mlir::ModuleOp module = plan.ranksOf(r);
    int64_t k = 0;
    while (k + 1 < static_cast<int64_t>(modules.size()) && modules[k] != module)
      ++k;
    m.replicaLibrary.push_back(k);
  }
  phase("");

  // Every shared object vouched for by size and checksum: the runner loads
  // nothing else (runtime/bundle/BundleFiles.h).
  std::vector<std::string> objects;
  for (const ProgramLibrary &lib : m.libraries)
    objects.push_back(lib.file);
  if (m.eval)
    objects.push_back(m.eval->file);
  for (const std::string &name : objects)
    for (const std::string &file : {name, cpuLevelFile(name, kCpuLevels[0]),
                                    cpuLevelFile(name, kCpuLevels[1])}) {
      llvm::SmallString<256> path(dir);
      llvm::sys::path::append(path, file);
      if (file != name && !llvm::sys::fs::exists(path))
        continue;
      BundleFile f;
      f.name = file;
      if (std::string err = describeBundleFile(path.str().str(), f);
          !err.empty()) {
        error = err;
        return false;
      }
      m.files.push_back(f);
    }
  llvm::SmallString<256> manifest(dir);
  llvm::sys::path::append(manifest, kManifestFileName);
  if (std::string err = writeManifest(m, manifest.str().str()); !err.empty()) {
    error = err;
    return false;
  }
  // The manifest is read back as the runner will read it: a plan this
  // compiler makes and the runner refuses is a bug to find here.
  PlanManifest back;
  if (!readManifest(manifest.str().str(), back, error)) {
    error = "the compiled plan does not read back: " + error;
    return false;
  }
  report.ranks = plan.stages * plan.replicas;
  uint64_t manifestBytes = 0;
  (void)llvm::sys::fs::file_size(manifest, manifestBytes);
  report.files.push_back(
      {kManifestFileName, static_cast<int64_t>(manifestBytes)});
  for (const BundleFile &f : m.files)
    report.files.push_back({f.name, f.bytes});
  if (std::string err = rt::commitCheckpointSet(finalDir); !err.empty()) {
    error = err;
    return false;
  }
  abandon.keep = true;
  return true;
}

} // namespace whale
